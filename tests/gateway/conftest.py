"""Real child servers for the gateway tests: the venv's Python servers, the pinned npm ones, a tiny one."""

from __future__ import annotations

import json
import logging
import runpy
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

REPO = Path(__file__).resolve().parents[2]
NPM_MODULES = REPO / ".cache" / "npm" / "node_modules"
TINY_SERVER = Path(__file__).with_name("tiny_server.py")

Entry = dict[str, Any]


def npm_entry_point(package: str) -> Path:
    """The script of an npm server that `make setup` installed (pinned) under .cache/npm."""
    manifest = NPM_MODULES / package / "package.json"
    if not manifest.exists():
        pytest.fail(f"{package} is not installed under {NPM_MODULES}: run `make setup`")
    bin_field: str | dict[str, str] = json.loads(manifest.read_text(encoding="utf-8"))["bin"]
    script = bin_field if isinstance(bin_field, str) else next(iter(bin_field.values()))
    return manifest.parent / script


@pytest.fixture
def npm_server() -> Callable[[str], Entry]:
    """`npm_server("@modelcontextprotocol/server-memory")`: an mcpServers entry running it under node."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; the npm child servers need Node 20")

    def entry(package: str, *args: str) -> Entry:
        return {"command": node, "args": [str(npm_entry_point(package)), *args]}

    return entry


@pytest.fixture
def tiny_server() -> Entry:
    """An mcpServers entry for the tiny test server over stdio."""
    return {"command": sys.executable, "args": [str(TINY_SERVER)]}


@pytest.fixture
def tiny_mcp() -> MCPServer:
    """The tiny test server, in-process (for the HTTP transports)."""
    build: Callable[[], MCPServer] = runpy.run_path(str(TINY_SERVER))["build"]
    return build()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A fresh git repository with one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True, timeout=30)
    (repo / "hello.txt").write_text("hello\n", encoding="utf-8")
    return repo


Served = tuple[int, list[dict[str, str]]]
"""The port an app is served on, and the headers of every HTTP request it has seen so far."""
ServeAsgi = Callable[[ASGIApp], AbstractAsyncContextManager[Served]]


@asynccontextmanager
async def serve_asgi_app(app: ASGIApp) -> AsyncIterator[Served]:
    """Serve a real HTTP app on 127.0.0.1 on a free port; yields the port and the headers seen."""
    seen: list[dict[str, str]] = []

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw: list[tuple[bytes, bytes]] = scope["headers"]
            seen.append({k.decode("latin-1"): v.decode("latin-1") for k, v in raw})
        await app(scope, receive, send)

    # The socket listens before uvicorn starts, so a client may connect at once: no readiness polling.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(recording, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(server.serve, [sock])
            try:
                yield port, seen
            finally:
                server.should_exit = True
    finally:
        sock.close()


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
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def child_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the child module's logger, whatever configure_logging did to propagation."""
    recorder = _Recorder()
    logger = logging.getLogger("gateway._child")
    previous = logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    try:
        yield recorder.records
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(previous)
