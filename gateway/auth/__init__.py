"""Who is calling over HTTP: static API tokens and OAuth bearer JWTs, verified for the SDK's middleware."""

from gateway.auth._identity import STATIC_ISSUER, GatewayAccessToken, Identity, Owner, identity_of
from gateway.auth._jwt import JwtVerifier
from gateway.auth._sdk import (
    bearer_middleware,
    identity_in,
    require_token,
    resource_metadata_routes,
    resource_metadata_url,
)
from gateway.auth._static import StaticTokenVerifier
from gateway.auth._verifier import GatewayTokenVerifier, build_verifier
from gateway.auth.config import AuthConfig, OAuthConfig

__all__ = (
    "STATIC_ISSUER",
    "AuthConfig",
    "GatewayAccessToken",
    "GatewayTokenVerifier",
    "Identity",
    "JwtVerifier",
    "OAuthConfig",
    "Owner",
    "StaticTokenVerifier",
    "bearer_middleware",
    "build_verifier",
    "identity_in",
    "identity_of",
    "require_token",
    "resource_metadata_routes",
    "resource_metadata_url",
)
