"""The SDK's own auth middleware and metadata route, over our verifier, served over real HTTP."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from gateway.auth import (
    bearer_middleware,
    build_verifier,
    identity_in,
    require_token,
    resource_metadata_routes,
)
from gateway.auth.config import AuthConfig
from tests.auth.issuer import AUDIENCE, SCOPE, LocalIssuer
from tests.real_servers import serve_asgi_app

pytestmark = pytest.mark.anyio

ALICE = secrets.token_urlsafe(32)
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
CHALLENGE = (
    'Bearer error="invalid_token", error_description="Authentication required", '
    f'resource_metadata="http://127.0.0.1:8080{METADATA_PATH}"'
)


async def _whoami(scope: Scope, receive: Receive, send: Send) -> None:
    identity = identity_in(scope)
    assert identity is not None  # only authenticated requests get here
    answer = {"principal": identity.principal, "scopes": list(identity.scopes)}
    await JSONResponse(answer)(scope, receive, send)


@asynccontextmanager
async def _gateway_face(auth: AuthConfig) -> AsyncIterator[httpx2.AsyncClient]:
    """An app as the HTTP server will build it: the MCP path behind the SDK's auth, and the metadata."""
    app = Starlette(
        routes=[Route("/mcp", require_token(_whoami, auth)), *resource_metadata_routes(auth)],
        middleware=bearer_middleware(build_verifier(auth)),
    )
    async with (
        serve_asgi_app(app) as (port, _),
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client,
    ):
        yield client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_request_without_a_valid_token_gets_401_naming_the_resource_metadata(
    issuer: LocalIssuer,
) -> None:
    with anyio.fail_after(10):
        async with _gateway_face(issuer.auth({"alice": ALICE})) as client:
            answers = [
                await client.get("/mcp"),
                await client.get("/mcp", headers=_bearer(secrets.token_urlsafe(32))),
                await client.get("/mcp", headers=_bearer(issuer.mint(exp=1))),
                await client.get("/mcp", headers=_bearer(issuer.mint(aud="https://other.example.com"))),
                await client.get("/mcp", headers={"Authorization": f"Basic {ALICE}"}),
            ]
    for answer in answers:
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == CHALLENGE
        assert answer.json()["error"] == "invalid_token"


async def test_a_valid_jwt_or_static_token_reaches_the_endpoint_as_its_principal(issuer: LocalIssuer) -> None:
    with anyio.fail_after(10):
        async with _gateway_face(issuer.auth({"alice": ALICE})) as client:
            by_jwt = await client.get("/mcp", headers=_bearer(issuer.mint("ec-1", sub="bob")))
            by_token = await client.get("/mcp", headers=_bearer(ALICE))
    assert (by_jwt.status_code, by_jwt.json()) == (200, {"principal": "bob", "scopes": [SCOPE]})
    assert (by_token.status_code, by_token.json()["principal"]) == (200, "alice")


async def test_a_jwt_past_its_expiry_by_less_than_the_leeway_reaches_the_endpoint(
    issuer: LocalIssuer,
) -> None:
    expired = issuer.mint(exp=int(time.time()) - 20)
    with anyio.fail_after(10):
        async with _gateway_face(issuer.auth(leeway_seconds=60)) as client:
            within = await client.get("/mcp", headers=_bearer(expired))
        async with _gateway_face(issuer.auth(leeway_seconds=5)) as client:
            past = await client.get("/mcp", headers=_bearer(expired))
    assert (within.status_code, within.json()["principal"]) == (200, "alice")
    assert past.status_code == 401


async def test_a_token_without_a_required_scope_gets_403_insufficient_scope(issuer: LocalIssuer) -> None:
    with anyio.fail_after(10):
        async with _gateway_face(issuer.auth({"alice": ALICE}, required_scopes=[SCOPE])) as client:
            lacking = await client.get("/mcp", headers=_bearer(issuer.mint(scope="audit:read")))
            having = await client.get("/mcp", headers=_bearer(issuer.mint(scope=f"audit:read {SCOPE}")))
            static = await client.get("/mcp", headers=_bearer(ALICE))
    assert lacking.status_code == 403
    assert 'error="insufficient_scope"' in lacking.headers["www-authenticate"]
    assert (having.status_code, static.status_code) == (200, 200)


async def test_the_protected_resource_metadata_names_this_gateway_and_its_issuer(issuer: LocalIssuer) -> None:
    with anyio.fail_after(10):
        async with _gateway_face(issuer.auth(required_scopes=[SCOPE])) as client:
            answer = await client.get(METADATA_PATH)
    assert answer.status_code == 200
    metadata = answer.json()
    assert metadata["resource"] == AUDIENCE
    assert metadata["authorization_servers"] == [issuer.url]  # as written: no slash added
    assert metadata["scopes_supported"] == [SCOPE]
    assert metadata["bearer_methods_supported"] == ["header"]


async def test_with_static_tokens_alone_the_401_names_no_metadata_and_none_is_served() -> None:
    auth = AuthConfig.model_validate({"tokens": {"alice": ALICE}})
    with anyio.fail_after(10):
        async with _gateway_face(auth) as client:
            refused = await client.get("/mcp")
            metadata = await client.get(METADATA_PATH)
            accepted = await client.get("/mcp", headers=_bearer(ALICE))
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == (
        'Bearer error="invalid_token", error_description="Authentication required"'
    )
    assert metadata.status_code == 404
    assert accepted.json() == {"principal": "alice", "scopes": []}
