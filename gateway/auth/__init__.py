"""Who is calling over HTTP: static API tokens and OAuth bearer JWTs, verified for the SDK's middleware."""

from gateway.auth._identity import STATIC_ISSUER, Identity, Owner, identity_of
from gateway.auth._sdk import bearer_middleware, identity_in, require_token, resource_metadata_routes
from gateway.auth._static import still_configured
from gateway.auth._verifier import build_verifier

__all__ = (
    "STATIC_ISSUER",
    "Identity",
    "Owner",
    "bearer_middleware",
    "build_verifier",
    "identity_in",
    "identity_of",
    "require_token",
    "resource_metadata_routes",
    "still_configured",
)
