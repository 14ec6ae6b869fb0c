"""The config's `auth` section: who may call the gateway over HTTP, by static token or OAuth bearer JWT.

Static tokens come from the environment (`"alice": "${ALICE_TOKEN}"`, expanded by the config loader,
which also registers them as secrets); OAuth names the issuer whose JWKS signs the tokens, and the
audience that makes a token this gateway's.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from gateway.shared import as_array

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHMS",
    "MIN_TOKEN_CHARS",
    "Algorithm",
    "AuthConfig",
    "OAuthConfig",
]

MIN_TOKEN_CHARS = 32
"""A static token shorter than this is refused: a short one can be guessed over the network."""

Algorithm = Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
ALGORITHMS: tuple[Algorithm, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The signature algorithms a token may use: public-key ones only, so never `none` nor HMAC (HS*),
whose "key" a resource server would have to share, or would take from the public JWKS."""
DEFAULT_ALGORITHMS: tuple[Algorithm, ...] = ALGORITHMS[:-1]  # the RSA and EC families

_PRINCIPAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_PLAIN_HTTP = (
    "use https:// (http:// only for a loopback address such as 127.0.0.1): keys fetched, or an issuer "
    "named, over plain HTTP can be forged on the way"
)


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _https_url(url: str) -> str:
    """An absolute https URL, or http on loopback; the config says why anything else is refused."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{url!r} is not an absolute http(s) URL")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValueError(_PLAIN_HTTP)
    if parts.fragment or parts.username or parts.password:
        raise ValueError("a URL without a #fragment or user:password@")
    return url


def _long_enough(token: SecretStr) -> SecretStr:
    length = len(token.get_secret_value())
    if length < MIN_TOKEN_CHARS:
        raise ValueError(
            f"the token is {length} characters; it must be at least {MIN_TOKEN_CHARS}, or it can be "
            'guessed over the network: generate one with python -c "import secrets; '
            'print(secrets.token_urlsafe(32))"'
        )
    return token


HttpsUrl = Annotated[str, AfterValidator(_https_url)]
StaticToken = Annotated[SecretStr, AfterValidator(_long_enough)]


class OAuthConfig(BaseModel):
    """Bearer JWTs from an OAuth authorization server, checked against its published keys (JWKS)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="OAuth resource server")

    issuer: HttpsUrl = Field(
        description="The authorization server, exactly as its tokens' `iss` claim says (a trailing slash "
        "counts); also listed in this gateway's protected resource metadata."
    )
    audience: HttpsUrl = Field(
        description="This gateway's MCP URL as clients reach it (`https://gw.example.com/mcp`): a token "
        "whose `aud` does not name it was issued for another service and is refused. Its protected "
        "resource metadata is served at `/.well-known/oauth-protected-resource` followed by its path."
    )
    jwks_uri: HttpsUrl = Field(
        description="Where the issuer publishes its signing keys (JWKS); fetched when first needed, kept "
        "for `jwks_cache_seconds`, and fetched again early for a token signed by a key it does not list."
    )
    algorithms: list[Algorithm] = Field(
        default_factory=lambda: list(DEFAULT_ALGORITHMS),
        min_length=1,
        description="Signature algorithms a token may use (its header's `alg`): public-key ones only, "
        "never `none` or HS256.",
    )
    leeway_seconds: float = Field(
        default=30,
        ge=0,
        le=300,
        description="Clock skew allowed between the issuer and this gateway for `nbf`, `iat` and `exp`.",
    )
    jwks_cache_seconds: float = Field(
        default=300,
        ge=30,
        le=86_400,
        description="How long fetched keys are used before they are fetched again.",
    )
    required_scopes: list[str] = Field(
        default_factory=list[str],
        description="Scopes every token must carry (its `scope` or `scp` claim); a token without one is "
        "refused with 403 insufficient_scope. Static tokens are given them.",
    )

    @field_validator("algorithms", mode="before")
    @classmethod
    def _public_key_only(cls, value: Any) -> Any:
        for item in as_array(value):
            if isinstance(item, str) and (item.lower() == "none" or item.upper().startswith("HS")):
                raise ValueError(
                    f'"{item}" is not allowed: a token must be signed with the issuer\'s private key '
                    f"({', '.join(ALGORITHMS)}); with {item} anyone could forge one"
                )
        return value

    @field_validator("required_scopes")
    @classmethod
    def _scope_words(cls, scopes: list[str]) -> list[str]:
        for scope in scopes:
            if not scope or any(char.isspace() for char in scope):
                raise ValueError(f"{scope!r} is not a scope: one word each, no spaces")
        return scopes


class AuthConfig(BaseModel):
    """Who may call the gateway over HTTP: static tokens naming principals, OAuth bearer JWTs, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Authentication")

    tokens: dict[str, StaticToken] = Field(
        default_factory=dict[str, StaticToken],
        description='Static API tokens by principal: `"alice": "${ALICE_TOKEN}"`, each naming an '
        "environment variable that holds at least 32 random characters. Kept only as SHA-256 hashes, "
        "compared in constant time, redacted like every secret.",
    )
    oauth: OAuthConfig | None = Field(
        default=None,
        description="Accept bearer JWTs from an OAuth authorization server (MCP authorization: this "
        "gateway as the resource server).",
    )

    @field_validator("tokens")
    @classmethod
    def _one_token_per_principal(cls, tokens: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name in tokens:
            if not _PRINCIPAL.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a principal name: up to 64 letters, digits and . _ @ + -, "
                    "starting with a letter or digit"
                )
        owners: dict[str, list[str]] = {}
        for name, token in tokens.items():
            owners.setdefault(token.get_secret_value(), []).append(name)
        shared = next((names for names in owners.values() if len(names) > 1), None)
        if shared is not None:
            raise ValueError(
                f"{' and '.join(shared)} have the same token: give each principal its own, or the gateway "
                "cannot tell them apart"
            )
        return tokens

    @model_validator(mode="after")
    def _some_way_in(self) -> Self:
        if not self.tokens and self.oauth is None:
            raise ValueError('"tokens", "oauth" or both: with neither, no client could call the gateway')
        return self
