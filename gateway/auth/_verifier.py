"""The verifier the HTTP server gives the SDK: static tokens first, then bearer JWTs when configured."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.auth._identity import GatewayAccessToken
from gateway.auth._jwt_shape import looks_like_jwt
from gateway.auth._reasons import Reason, log_refusal, refused
from gateway.auth._static import StaticTokenVerifier
from gateway.auth.config import AuthConfig, OAuthConfig
from gateway.errors import TokenRefused

if TYPE_CHECKING:
    from gateway.auth._jwt import JwtVerifier

__all__ = ["GatewayTokenVerifier", "build_verifier"]


class GatewayTokenVerifier:
    """The SDK's TokenVerifier for the `auth` section: a static token, else a JWT of the issuer."""

    def __init__(
        self,
        static: StaticTokenVerifier | None,
        jwt: JwtVerifier | None,
        *,
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        """`on_refusal` is told each refusal's reason (the metrics count them)."""
        self.static = static
        self.jwt = jwt
        self.on_refusal = on_refusal

    def use_tokens(self, config: AuthConfig) -> None:
        """Take `config`'s static tokens from the next request on (a reload applied them): a token
        removed is refused at once. The JWT issuer stays the one this verifier was built for."""
        self.static = _static_verifier(config)

    def __repr__(self) -> str:
        return f"GatewayTokenVerifier(static={self.static!r}, jwt={self.jwt!r})"

    async def authenticate(self, token: str) -> GatewayAccessToken:
        """The AccessToken for a configured static token or a valid JWT, else TokenRefused."""
        if not token:
            raise refused(Reason.MISSING)
        if self.static is not None and (accepted := self.static.accept(token)) is not None:
            return accepted
        if self.jwt is not None and looks_like_jwt(token):
            return await self.jwt.authenticate(token)
        raise refused(Reason.UNKNOWN)

    async def verify_token(self, token: str) -> GatewayAccessToken | None:
        """The SDK's TokenVerifier: the AccessToken, or None (the reason logged)."""
        try:
            return await self.authenticate(token)
        except TokenRefused as refusal:
            log_refusal(refusal, "auth")
            if self.on_refusal is not None:
                self.on_refusal(refusal.reason)
            return None


def build_verifier(
    config: AuthConfig, *, on_refusal: Callable[[str], None] | None = None
) -> GatewayTokenVerifier:
    """The verifier for an `auth` section; static tokens are given the OAuth required scopes.
    `on_refusal` is told each refusal's reason."""
    jwt = _jwt_verifier(config.oauth) if config.oauth is not None else None
    return GatewayTokenVerifier(_static_verifier(config), jwt, on_refusal=on_refusal)


def _static_verifier(config: AuthConfig) -> StaticTokenVerifier | None:
    scopes = config.oauth.required_scopes if config.oauth is not None else []
    tokens = {principal: token.get_secret_value() for principal, token in config.tokens.items()}
    return StaticTokenVerifier(tokens, scopes=scopes) if tokens else None


def _jwt_verifier(oauth: OAuthConfig) -> JwtVerifier:
    # PyJWT and cryptography load only when the config names an issuer.
    from gateway.auth._jwt import JwtVerifier

    return JwtVerifier(oauth)
