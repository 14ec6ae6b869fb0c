"""A local issuer serving its JWKS over real HTTP on loopback, and the auth logger's records."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

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


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def auth_log() -> Iterator[list[logging.LogRecord]]:
    """Records (INFO and up) of the auth wing's logger, whatever configure_logging did to propagation."""
    recorder, logger = _Recorder(), logging.getLogger("gateway.auth")
    previous = logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    try:
        yield recorder.records
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(previous)
