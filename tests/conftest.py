"""Shared fixtures: one loaded Sandbox per session, and real child servers (npm, the test servers, HTTP)."""

from __future__ import annotations

import copy
import logging
import shutil
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

from gateway import Sandbox, SandboxLimits
from gateway.server._execution_store import executions_file
from tests.auth.issuer import Keys, LocalIssuer
from tests.e2e.gateway_process import python_child, serve_started
from tests.real_servers import TINY_SERVER, Served, built, fresh_git_repo, npm_entry_point, serve_asgi_app
from tests.state.redis_server import redis_server, redis_url  # noqa: F401  (fixtures, for every test)

Entry = dict[str, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def results_files_of_test_configs_removed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A served gateway keeps background results in the user's cache under its config file's path; the
    suite's configs live in its temporary directories, so their results files go when the session ends."""
    yield
    names = {executions_file(path.resolve()).name for path in tmp_path_factory.getbasetemp().rglob("*")}
    directory = executions_file(None).parent
    for part in directory.glob("runs-*") if directory.is_dir() else ():
        if part.name.removesuffix("-wal").removesuffix("-shm").removesuffix("-journal") in names:
            part.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """A sandbox with the default limits, shared by the tests that do not change them."""
    with Sandbox(SandboxLimits()) as loaded:
        yield loaded


@pytest.fixture
def npm_server() -> Callable[[str], Entry]:
    """`npm_server("@modelcontextprotocol/server-memory")`: an mcpServers entry running it under node."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; the npm child servers need Node 20")

    def entry(package: str, *args: str) -> Entry:
        return {"command": node, "args": [str(npm_entry_point(package)), *args]}

    return entry


@pytest.fixture(scope="session", autouse=True)
def forked_children() -> None:
    """Start this process's serve server, from which Python test children fork (`python_child`)."""
    serve_started()


@pytest.fixture
def tiny_server() -> Entry:
    """An mcpServers entry for the tiny test server over stdio."""
    return python_child(TINY_SERVER)


@pytest.fixture
def tiny_mcp() -> MCPServer:
    """The tiny test server, in-process (for the HTTP transports)."""
    build = built(TINY_SERVER)
    return build()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A fresh git repository with one untracked file."""
    return fresh_git_repo(tmp_path)


ServeAsgi = Callable[[ASGIApp], AbstractAsyncContextManager[Served]]


@pytest.fixture
def serve_asgi() -> ServeAsgi:
    """`async with serve_asgi(app) as (port, headers):` serves a real HTTP app on 127.0.0.1:port."""
    return serve_asgi_app


@pytest.fixture
def closed_port() -> int:
    """A local port with nothing listening on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # A copy: a parent logger's handler filters the same record next (redaction takes exc_info off).
        self.records.append(copy.copy(record))


@contextmanager
def _recording(name: str) -> Iterator[list[logging.LogRecord]]:
    """A logger's records (INFO and up) while inside, whatever configure_logging did to propagation."""
    recorder, logger = _Recorder(), logging.getLogger(name)
    previous = logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    try:
        yield recorder.records
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(previous)


@pytest.fixture
def child_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the children's logger."""
    with _recording("gateway.children") as records:
        yield records


@pytest.fixture
def sandbox_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the sandbox's logger."""
    with _recording("gateway.sandbox") as records:
        yield records


@pytest.fixture
def auth_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the auth wing's logger."""
    with _recording("gateway.auth") as records:
        yield records


@pytest.fixture
def policy_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the policy's logger."""
    with _recording("gateway.policy") as records:
        yield records


@pytest.fixture
def server_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the MCP server's logger."""
    with _recording("gateway.server") as records:
        yield records


@pytest.fixture
def telemetry_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the telemetry wing's logger."""
    with _recording("gateway.telemetry") as records:
        yield records


@pytest.fixture
def middleware_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the middleware wing's logger, as it emits them (before a parent's handler filters)."""
    with _recording("gateway.middleware") as records:
        yield records


@pytest.fixture(scope="session")
def issuer_keys() -> Keys:
    """RSA and EC signing keys, made once: RSA key generation takes a while."""
    return Keys.make()


@pytest.fixture
async def issuer(issuer_keys: Keys) -> AsyncIterator[LocalIssuer]:
    """An OAuth issuer whose JWKS is served on 127.0.0.1 for the test's duration."""
    local = LocalIssuer(issuer_keys)
    async with serve_asgi_app(local.app()) as (port, _):
        local.port = port
        yield local
