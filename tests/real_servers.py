"""Where the tests' real child servers live, and how to start them: npm servers, the test servers, HTTP."""

from __future__ import annotations

import json
import runpy
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import Tool
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.catalog import Catalog
from gateway.catalog.evaluation import load_tool_snapshots

REPO = Path(__file__).resolve().parents[1]
NPM_MODULES = REPO / ".cache" / "npm" / "node_modules"
SERVERS = REPO / "tests" / "servers"
TINY_SERVER = SERVERS / "tiny_server.py"
FAULT_SERVER = SERVERS / "fault_server.py"
LEDGER_SERVER = SERVERS / "ledger_server.py"
"""A server with countable side effects: each `append` adds a line to the file in LEDGER_FILE."""
SCREEN_SERVER = SERVERS / "screen_server.py"
"""A server for tools the model calls directly: an image, a secret in structured content, an error."""
CATALOG_SERVER = SERVERS / "catalog_server.py"
"""A server whose tools are the JSON file in CATALOG_FILE, read again on every tools/list."""
RESOURCE_SERVER = SERVERS / "resource_server.py"
"""A server with resources: text, binary, a template, a secret, a failing read, pages of them."""
TRACE_SERVER = SERVERS / "trace_server.py"
"""A server whose `trace_context` tool answers the trace context its request carried (_meta, header)."""
TOOL_SNAPSHOTS = REPO / "tests" / "data" / "tools"
"""`tools/list` snapshots of real servers, for offline catalog and search tests."""

Served = tuple[int, list[dict[str, str]]]
"""The port an app is served on, and the headers of every HTTP request it has seen so far."""


Build = Callable[[], MCPServer]


def built(script: Path, name: str = "build") -> Build:
    """The function of a test server's script (`tests/servers/*.py`) that builds its MCPServer, run as
    Python runs a script: its directory first on the path, where its siblings (`_hold`) are."""
    sys.path.insert(0, str(script.parent))
    try:
        return runpy.run_path(str(script))[name]
    finally:
        sys.path.remove(str(script.parent))


# Runs the command after it (argv[2:]) once the file argv[1] names exists. Until then it exits once its
# stdin is closed (a hang-up, whatever was written to it), as the gateway stopping a child asks.
_GATE = (
    "import os, select, sys\n"
    "stdin = select.poll()\n"
    "stdin.register(0, select.POLLHUP)\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    if stdin.poll(20):\n"
    "        sys.exit(0)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


def gated(entry: dict[str, Any], gate: Path) -> dict[str, Any]:
    """The mcpServers `entry` of a Python stdio child that starts only once the file `gate` exists:
    until the test makes it, the gateway sees the child still starting."""
    assert entry["command"] == sys.executable, "the gate execs the same interpreter"
    return {**entry, "args": ["-c", _GATE, str(gate), *entry["args"]]}


def fresh_git_repo(parent: Path) -> Path:
    """`parent/repo`: a fresh git repository with one untracked file, for the git server to serve."""
    repo = parent / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True, timeout=30)
    (repo / "hello.txt").write_text("hello\n", encoding="utf-8")
    return repo


def npm_entry_point(package: str) -> Path:
    """The script of an npm server that `make setup` installed (pinned) under .cache/npm."""
    manifest = NPM_MODULES / package / "package.json"
    if not manifest.exists():
        pytest.fail(f"{package} is not installed under {NPM_MODULES}: run `make setup`")
    bin_field: str | dict[str, str] = json.loads(manifest.read_text(encoding="utf-8"))["bin"]
    script = bin_field if isinstance(bin_field, str) else next(iter(bin_field.values()))
    return manifest.parent / script


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


def snapshot_tools() -> dict[str, list[Tool]]:
    """The captured `tools/list` of each real server, by server name."""
    return load_tool_snapshots([TOOL_SNAPSHOTS])


def snapshot_catalog() -> Catalog:
    """A catalog of the captured real servers' tools (50 tools of five servers)."""
    return Catalog(snapshot_tools())
