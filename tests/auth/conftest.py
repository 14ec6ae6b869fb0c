"""A local issuer serving its JWKS over real HTTP on loopback (the auth log fixture is the suite's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.auth.issuer import Keys, LocalIssuer
from tests.real_servers import serve_asgi_app


@pytest.fixture(scope="session")
def issuer_keys() -> Keys:
    """RSA and EC signing keys, made once: RSA key generation takes a while."""
    return Keys.make()


@pytest.fixture
async def issuer(issuer_keys: Keys) -> AsyncIterator[LocalIssuer]:
    """An issuer whose JWKS is served on 127.0.0.1 for the test's duration."""
    local = LocalIssuer(issuer_keys)
    async with serve_asgi_app(local.app()) as (port, _):
        local.port = port
        yield local
