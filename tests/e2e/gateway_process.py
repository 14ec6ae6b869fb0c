"""Driving the real gateway process: `codemode-gateway` commands, and an SDK client session over stdio."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.client import ConnectMode
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.client.stdio import stdio_client

from gateway.catalog._render import STILL_STARTING
from tests.cli.command import shared_commands
from tests.real_servers import LEDGER_SERVER, TINY_SERVER, npm_entry_point

WAIT = 120  # real child servers start in seconds; this bounds a hang, not a race
STARTING_WAIT = 10.0  # how long a search waits for children still starting, as the gateway once did

SERVE_SERVER = Path(__file__).with_name("serve_server.py")
SERVE_LAUNCHER = Path(__file__).with_name("serve_launcher.py")
_serve_started: list[subprocess.Popen[str]] = []


def _serve_socket_path() -> Path:
    """Where this process's serve server listens (`serve_started`), known before it starts: a child's
    entry names it."""
    return Path(tempfile.gettempdir()) / f"codemode-serve-{os.getpid()}" / "serve.sock"


def python_child(script: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """An mcpServers entry for a Python test server (`tests/servers/*.py`): a launcher whose script is
    forked from this process's serve server, which imported the SDK once (a Python child's start costs
    about a CPU-second of imports otherwise), or run as it is while none is started. For tests that
    judge a child's process itself (its pid, group or exit), spawn the script directly instead."""
    launched = ["-S", str(SERVE_LAUNCHER), str(_serve_socket_path()), "--script", str(script), *args]
    return {"command": sys.executable, "args": launched, **({"env": env} if env is not None else {})}


TINY: dict[str, Any] = python_child(TINY_SERVER)
"""An mcpServers entry for the tiny test server (tools echo, env, die)."""

EVERYTHING: dict[str, Any] = {
    "command": "node",
    "args": [str(npm_entry_point("@modelcontextprotocol/server-everything"))],
}
"""An mcpServers entry for the reference server `everything` (echo(message) answers "Echo: ..."): a
Node child, for tests where any child will do (it starts on a fraction of a Python child's CPU)."""


def ledger_server(directory: Path) -> dict[str, Any]:
    """An mcpServers entry for the ledger server, whose entries go to `directory/ledger.txt`."""
    ledger = str(directory / "ledger.txt")
    return python_child(LEDGER_SERVER, env={"LEDGER_FILE": ledger})


def ledger_entries(directory: Path) -> list[str]:
    """What reached the ledger server from `ledger_server(directory)`, oldest first."""
    path = directory / "ledger.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


LEXICAL_SEARCH: dict[str, Any] = {"search": {"semantic": "off"}}
"""The search section the helpers write unless a test sets its own: lexical search only."""


def write_config(
    directory: Path, config: dict[str, Any], name: str = "team.json", *, default_search: bool = False
) -> Path:
    """Write `config` as JSON into `directory/name`, with search.semantic off unless `config` sets
    `search` or `default_search` keeps the product's default (the tests of search and the model)."""
    # Every gateway with the default search loads the semantic model (about half a CPU-second per
    # process), which only the tests of search read: the others rank lexically.
    written = config if default_search or "search" in config else {**config, **LEXICAL_SEARCH}
    path = directory / name
    path.write_text(json.dumps(written), encoding="utf-8")
    return path


def environment(extra: dict[str, str] | None = None, *, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The test process's environment without a config of its own, plus `extra`."""
    dropped = {"CODEMODE_CONFIG", "CODEMODE_GATEWAY_PARENT", *drop}
    return {k: v for k, v in os.environ.items() if k not in dropped} | (extra or {})


def serve_started() -> Path:
    """The socket of this process's serve server (`serve_server.py`), started at its first use."""
    socket_path = _serve_socket_path()
    if not _serve_started:
        socket_path.parent.mkdir(mode=0o700, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "CODEMODE_CONFIG"}
        server = subprocess.Popen(
            [sys.executable, str(SERVE_SERVER), str(socket_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert server.stdout is not None
        if server.stdout.readline() != "listening\n":
            raise RuntimeError(f"the serve server did not start (exit {server.wait()})")

        def stop() -> None:
            assert server.stdin is not None
            server.stdin.close()  # it exits; gateways and children still running end with their clients
            server.wait(timeout=WAIT)
            shutil.rmtree(socket_path.parent, ignore_errors=True)

        atexit.register(stop)
        _serve_started.append(server)
    return socket_path


def gateway_args(*args: str) -> list[str]:
    """The arguments, after this interpreter, of a long-running `codemode-gateway ARGS` (`serve`) that an
    MCP client spawns: a launcher whose gateway is forked from this process's serve server, which imported
    `serve` once (a gateway then costs its own start, not the interpreter's and the imports), on the
    launcher's streams, environment and directory; it forwards SIGTERM, SIGINT and SIGHUP."""
    return ["-S", str(SERVE_LAUNCHER), str(serve_started()), *args]


def serve_params(
    config: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> StdioServerParameters:
    """What an MCP client spawns for `codemode-gateway serve --config CONFIG` (`gateway_args`)."""
    return StdioServerParameters(
        command=sys.executable,
        args=gateway_args("serve", "--config", str(config)),
        env=env or environment(),
        cwd=cwd,
    )


async def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run `codemode-gateway ARGS` as `python -m gateway` does, in a process forked from one that imported
    the command line once (a command then costs its own work, not the interpreter's start and the
    imports); returns (exit code, stdout, stderr)."""
    return await shared_commands().run(*args, env=env or environment(), cwd=cwd, whole_env=True)


@asynccontextmanager
async def session(
    config: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    elicitation: ElicitationFnT | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with `codemode-gateway serve --config CONFIG`."""
    params = serve_params(config, env=env, cwd=cwd)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as client,
    ):
        with anyio.fail_after(WAIT):
            await client.initialize()
        yield client


@asynccontextmanager
async def sdk_client(
    config: Path,
    mode: ConnectMode = "auto",
    *,
    env: dict[str, str] | None = None,
    elicitation: ElicitationFnT | None = None,
    messages: MessageHandlerFnT | None = None,
) -> AsyncIterator[Client]:
    """The SDK's high-level `Client` on `codemode-gateway serve --config CONFIG`: `mode="auto"`
    negotiates 2026-07-28 with the gateway, `mode="legacy"` the handshake era (2025-11-25).
    `messages` sees what the server sends on its own (notifications), as the SDK's message handler."""
    params = serve_params(config, env=env)
    # Every request the client sends (the handshake too) waits at most WAIT for its answer.
    async with Client(
        params,
        mode=mode,
        elicitation_callback=elicitation,
        message_handler=messages,
        read_timeout_seconds=WAIT,
    ) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


class ToolCaller(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult: ...


async def search_docs(client: ToolCaller, query: str = "", *, settled: bool = True, **arguments: Any) -> str:
    """The search_docs answer as text; with `settled`, once it names no child still starting (the
    gateway answers at once, without them), or, past STARTING_WAIT, the answer naming them."""
    with anyio.fail_after(WAIT):
        answer = text(await client.call_tool("search_docs", {"query": query, **arguments}))
        with anyio.move_on_after(STARTING_WAIT if settled else 0):
            while STILL_STARTING in answer:  # the client has no other way to see a child get ready
                await anyio.sleep(0.05)
                answer = text(await client.call_tool("search_docs", {"query": query, **arguments}))
        return answer


async def execute(client: ClientSession, code: str) -> dict[str, Any]:
    """execute_code's full record (asked for with `details`)."""
    with anyio.fail_after(WAIT):
        result = await client.call_tool("execute_code", {"code": code, "details": True})
    return full_record(result)


def full_record(result: types.CallToolResult) -> dict[str, Any]:
    """The full record of an execute_code result that asked for `details`: its structured content,
    and its text says the same."""
    assert isinstance(result.structured_content, dict), text(result)
    assert json.loads(text(result)) == result.structured_content
    return result.structured_content


async def overview_once(client: ToolCaller, wanted: str) -> str:
    """The search_docs overview, once it holds `wanted` (a child's catalog changes asynchronously)."""
    with anyio.fail_after(WAIT):
        while True:  # the client has no other way to see a child's tools change
            overview = await search_docs(client)
            if wanted in overview:
                return overview
            await anyio.sleep(0.1)


# What the overview says of a child still on its first connection (gateway/catalog/_render.py).
_CONNECTING = "its tools appear when it is ready"


async def settled(client: ClientSession) -> None:
    """Once no child is still on its first connection: search_docs answers at once with the children
    that are ready, so a module sharing one session waits here before its tests read the catalog."""
    with anyio.fail_after(WAIT):
        while True:  # the client has no other way to see a child become ready
            if _CONNECTING not in await search_docs(client):
                return
            await anyio.sleep(0.1)
