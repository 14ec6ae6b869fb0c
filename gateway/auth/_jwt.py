"""Bearer JWTs from the configured issuer, verified with PyJWT against the issuer's JWKS.

In order: the token's shape, its header's `alg` against the allow-list (so `none` and HS256 are
refused before any key is looked at), the key its `kid` names, then PyJWT checks the signature with
that key bound to that one algorithm, and `exp`, `nbf`, `iat` (with leeway), `iss` and `aud`.
"""

from __future__ import annotations

import math
from typing import Any

import jwt

from gateway.auth._identity import GatewayAccessToken, Identity, token_digest
from gateway.auth._jwks import (
    DEFAULT_FETCH_TIMEOUT_SECONDS,
    DEFAULT_MAX_JWKS_BYTES,
    DEFAULT_MIN_FETCH_INTERVAL,
    JwksKeys,
)
from gateway.auth._jwt_shape import MAX_JWT_CHARS, looks_like_jwt
from gateway.auth._reasons import Reason, log_refusal, refused
from gateway.auth.config import OAuthConfig
from gateway.errors import TokenRefused

__all__ = ["MAX_JWT_CHARS", "JwtVerifier", "looks_like_jwt"]

_REQUIRED_CLAIMS = ["exp", "iss", "aud", "sub"]

# PyJWT's errors, most specific first, as the reason logged.
_REASONS: tuple[tuple[type[jwt.PyJWTError], Reason], ...] = (
    (jwt.ExpiredSignatureError, Reason.EXPIRED),
    (jwt.ImmatureSignatureError, Reason.NOT_YET_VALID),
    (jwt.InvalidAudienceError, Reason.WRONG_AUDIENCE),
    (jwt.InvalidIssuerError, Reason.WRONG_ISSUER),
    (jwt.MissingRequiredClaimError, Reason.MISSING_CLAIM),
    (jwt.InvalidSignatureError, Reason.BAD_SIGNATURE),
    (jwt.InvalidAlgorithmError, Reason.ALGORITHM),
    (jwt.InvalidKeyError, Reason.UNUSABLE_KEY),
)


def _words(value: Any) -> list[str]:
    """A claim as words: a space-separated string (`scope`, Azure's `scp`) or a list of strings."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item]  # pyright: ignore[reportUnknownVariableType]
    return []


def _identity(claims: dict[str, Any]) -> Identity:
    client = next((claims[name] for name in ("client_id", "azp") if isinstance(claims.get(name), str)), None)
    return Identity(
        principal=claims["sub"],
        client=client,
        scopes=tuple(dict.fromkeys(_words(claims.get("scope")) + _words(claims.get("scp")))),
        groups=tuple(dict.fromkeys(_words(claims.get("groups")))),
        issuer=claims["iss"],
        expires_at=int(claims["exp"]),
    )


class JwtVerifier:
    """The SDK's TokenVerifier for bearer JWTs from one issuer (`auth.oauth`)."""

    def __init__(
        self,
        config: OAuthConfig,
        *,
        min_fetch_interval: float = DEFAULT_MIN_FETCH_INTERVAL,
        fetch_timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS,
        max_jwks_bytes: int = DEFAULT_MAX_JWKS_BYTES,
    ) -> None:
        self.config = config
        self.keys = JwksKeys(
            config.jwks_uri,
            algorithms=config.algorithms,
            ttl_seconds=config.jwks_cache_seconds,
            min_fetch_interval=min_fetch_interval,
            timeout_seconds=fetch_timeout_seconds,
            max_bytes=max_jwks_bytes,
        )

    def __repr__(self) -> str:
        return f"JwtVerifier(issuer={self.config.issuer!r}, audience={self.config.audience!r})"

    async def authenticate(self, token: str) -> GatewayAccessToken:
        """The AccessToken for a valid token of this issuer and audience, else TokenRefused."""
        if not token:
            raise refused(Reason.MISSING)
        if not looks_like_jwt(token):
            raise refused(Reason.MALFORMED, "not a JWT")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise refused(Reason.MALFORMED, "unreadable header") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if not isinstance(algorithm, str) or algorithm not in self.config.algorithms:
            raise refused(Reason.ALGORITHM, repr(algorithm)[:40])
        if kid is not None and not isinstance(kid, str):
            raise refused(Reason.MALFORMED, "kid is not a string")
        key = await self.keys.key(kid, algorithm)
        claims = self._claims(token, key, algorithm)
        identity = _identity(claims)
        return GatewayAccessToken(
            token=token_digest(token),
            client_id=identity.client or identity.principal,
            subject=identity.principal,
            scopes=list(identity.scopes),
            # The SDK's middleware refuses a token whose `expires_at` has passed, leeway or not: the
            # leeway `jwt.decode` allowed must hold there too.
            expires_at=None
            if identity.expires_at is None
            else identity.expires_at + math.ceil(self.config.leeway_seconds),
            resource=self.config.audience,
            claims=claims,
            identity=identity,
        )

    def _claims(self, token: str, key: jwt.PyJWK, algorithm: str) -> dict[str, Any]:
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.config.audience,
                issuer=self.config.issuer,
                leeway=self.config.leeway_seconds,
                options={"require": _REQUIRED_CLAIMS, "enforce_minimum_key_length": True},
            )
        except jwt.PyJWTError as exc:
            reason = next((reason for kind, reason in _REASONS if isinstance(exc, kind)), Reason.MALFORMED)
            detail = exc.claim if isinstance(exc, jwt.MissingRequiredClaimError) else ""
            raise refused(reason, detail) from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise refused(Reason.MISSING_CLAIM, "sub")
        return claims

    async def verify_token(self, token: str) -> GatewayAccessToken | None:
        """The SDK's TokenVerifier: the AccessToken, or None (the reason logged)."""
        try:
            return await self.authenticate(token)
        except TokenRefused as refusal:
            log_refusal(refusal, "jwt")
            return None
