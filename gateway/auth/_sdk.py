"""The SDK's own auth pieces, set up for the `auth` section, for a Starlette app to use.

`bearer_middleware` verifies the `Authorization: Bearer` header of every request (the SDK's
BearerAuthBackend over our verifier) and leaves the result in `scope["user"]`; `require_token` wraps
the MCP endpoint in the SDK's RequireAuthMiddleware (401 with `WWW-Authenticate`, naming the protected
resource metadata under OAuth; 403 without a required scope); `resource_metadata_routes` serves that
metadata (RFC 9728) at its well-known path.
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.authentication import AuthCredentials
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp, Scope

from gateway.auth._identity import Identity, identity_of
from gateway.auth._reasons import refusals_from
from gateway.auth.config import AuthConfig

__all__ = [
    "bearer_middleware",
    "identity_in",
    "require_token",
    "resource_metadata_routes",
    "resource_metadata_url",
]


# As written: an issuer is compared as a string, so `https://idp.example.com` must not gain a slash.
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


class _ClientNamedBackend(BearerAuthBackend):
    """The SDK's backend, with the client's address known to the log line of a refused token."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        with refusals_from(conn.client.host if conn.client is not None else None):
            return await super().authenticate(conn)


def bearer_middleware(verifier: TokenVerifier) -> list[Middleware]:
    """Starlette middleware verifying each request's bearer token: the user in `scope["user"]`."""
    return [
        Middleware(AuthenticationMiddleware, backend=_ClientNamedBackend(verifier)),
        Middleware(AuthContextMiddleware),
    ]


def resource_metadata_url(auth: AuthConfig) -> AnyHttpUrl | None:
    """Where the protected resource metadata is, under OAuth: the audience's well-known URL."""
    if auth.oauth is None:
        return None
    return build_resource_metadata_url(_URL.validate_python(auth.oauth.audience))


def require_token(app: ASGIApp, auth: AuthConfig) -> ASGIApp:
    """`app` answering only requests `bearer_middleware` authenticated; others get 401 (or 403)."""
    scopes = auth.oauth.required_scopes if auth.oauth is not None else []
    return RequireAuthMiddleware(app, list(scopes), resource_metadata_url(auth))


def resource_metadata_routes(auth: AuthConfig) -> list[Route]:
    """The protected resource metadata route (RFC 9728), under OAuth; none for static tokens alone."""
    if auth.oauth is None:
        return []
    return create_protected_resource_routes(
        resource_url=_URL.validate_python(auth.oauth.audience),
        authorization_servers=[_URL.validate_python(auth.oauth.issuer)],
        scopes_supported=list(auth.oauth.required_scopes) or None,
    )


def identity_in(scope: Scope) -> Identity | None:
    """Who `bearer_middleware` found the request's caller to be; None if it was not authenticated."""
    user = scope.get("user")
    return identity_of(user.access_token) if isinstance(user, AuthenticatedUser) else None
