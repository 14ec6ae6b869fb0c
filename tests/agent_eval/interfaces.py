"""The three interfaces an agent may be given, each a set of MCP connections over stdio with the SDK client.

- `direct`: one client per default child (time, git, memory, filesystem, everything); tools are named
  `<server>.<tool>`;
- `gateway`: one client to `codemode-gateway serve` configured with the same children;
- `peer`: one client to FastMCP CodeMode 4.2.3 (`peer_server.py`, in its own venv) with one stdio
  proxy per child, mounted by namespace.

Every child is configured against the world: git on `repo/`, filesystem on `data/`, memory on
`memory.jsonl`, time in UTC, and everything with `SUPPORT_TZ` from `world.json`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import get_default_environment

from tests.agent_eval.layout import REPO, Interface, state_dir
from tests.real_servers import npm_entry_point

__all__ = ["Connections", "children", "connect", "ensure_peer_venv"]

NPM_MODULES = REPO / ".cache" / "npm" / "node_modules"
PEER_SERVER = Path(__file__).with_name("peer_server.py")
PEER_PINS = ["fastmcp[code-mode]==4.2.3", "pydantic-monty==1.4.0"]
WAIT_SECONDS = 180.0  # a child's first start (and a long snippet) may take this long; it bounds a hang


def children(world: Path) -> dict[str, dict[str, Any]]:
    """The default children as `mcpServers` entries, configured against `world`."""
    world = world.resolve()
    node = shutil.which("node") or "node"
    support_tz = json.loads((world / "world.json").read_text(encoding="utf-8"))["support_tz"]
    return {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(world / "repo")],
        },
        "memory": {
            "command": node,
            "args": [str(npm_entry_point("@modelcontextprotocol/server-memory"))],
            "env": {"MEMORY_FILE_PATH": str(world / "memory.jsonl")},
        },
        "filesystem": {
            "command": node,
            "args": [str(npm_entry_point("@modelcontextprotocol/server-filesystem")), str(world / "data")],
        },
        "everything": {
            "command": node,
            "args": [str(npm_entry_point("@modelcontextprotocol/server-everything")), "stdio"],
            "env": {"SUPPORT_TZ": support_tz},
        },
    }


def _config_file(world: Path) -> Path:
    path = state_dir(world) / "children.json"
    path.write_text(json.dumps({"mcpServers": children(world)}, indent=2), encoding="utf-8")
    return path


def _server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The SDK's safe default environment (what every stdio child gets) plus `extra`."""
    return get_default_environment() | (extra or {})


def ensure_peer_venv() -> Path:
    """The python of the peer's own venv (created with the pinned FastMCP on first use)."""
    venv = Path(os.environ.get("AGENT_EVAL_PEER_VENV", REPO / ".cache" / "peer-venv"))
    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    # Trials started together must not build the venv twice: one builds, the others wait for it.
    with venv.with_name(venv.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp, pins = venv / "installed", "\n".join(PEER_PINS) + "\n"
        if not stamp.exists() or stamp.read_text(encoding="utf-8") != pins:
            # With the uv `make setup` puts beside this python (on pip's indexes), else with pip.
            uv = Path(sys.executable).with_name("uv").is_file()
            bare = ["--without-pip"] if uv else []
            create = [sys.executable, "-m", "venv", "--clear", *bare, str(venv)]
            subprocess.run(create, check=True, timeout=300)
            with_uv = [sys.executable, str(REPO / "scripts" / "venv_install.py"), "--python", str(python)]
            with_pip = [str(python), "-m", "pip", "install", "--quiet"]
            install = [*(with_uv if uv else with_pip), *PEER_PINS]
            subprocess.run(install, check=True, timeout=1800)
            stamp.write_text(pins, encoding="utf-8")
    return python


@dataclass
class Connections:
    """The open clients of one interface, by server name (`direct`) or the single front server."""

    interface: Interface
    clients: dict[str, Client]

    async def list_tools(self, server: str | None = None) -> list[types.Tool]:
        """The tools the interface offers (for `direct`, named `server.tool`; optionally one server's)."""
        found: list[types.Tool] = []
        for name, client in self.clients.items():
            if server is not None and name != server:
                continue
            for tool in (await client.list_tools()).tools:
                shown = f"{name}.{tool.name}" if self.interface == "direct" else tool.name
                found.append(tool.model_copy(update={"name": shown}))
        return found

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call `tool` (for `direct`, `server.tool`) with `arguments`."""
        if self.interface == "direct":
            server, _, name = tool.partition(".")
            if server not in self.clients or not name:
                known = ", ".join(sorted(self.clients))
                raise LookupError(
                    f"unknown tool {tool!r}: direct tools are named <server>.<tool>, servers: {known}"
                )
            return await self.clients[server].call_tool(name, arguments, read_timeout_seconds=WAIT_SECONDS)
        return await self.clients["front"].call_tool(tool, arguments, read_timeout_seconds=WAIT_SECONDS)


def _parameters(interface: Interface, world: Path, server: str | None) -> dict[str, StdioServerParameters]:
    if interface == "direct":
        entries = children(world)
        chosen = {name: entry for name, entry in entries.items() if server is None or name == server}
        return {
            name: StdioServerParameters(command=e["command"], args=e["args"], env=_server_env(e.get("env")))
            for name, e in chosen.items()
        }
    config = _config_file(world)
    if interface == "gateway":
        args = ["-m", "gateway", "serve", "--config", str(config)]
        return {
            "front": StdioServerParameters(command=sys.executable, args=args, env=_server_env(), cwd=REPO)
        }
    quiet = {
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_LOG_LEVEL": "WARNING",
    }
    python = str(ensure_peer_venv())
    return {
        "front": StdioServerParameters(
            command=python, args=[str(PEER_SERVER), str(config)], env=_server_env(quiet)
        )
    }


@asynccontextmanager
async def connect(interface: Interface, world: Path, server: str | None = None) -> AsyncIterator[Connections]:
    """Open the interface's connections (for `direct`, only `server`'s when one is named)."""
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for name, params in _parameters(interface, world, server).items():
            client = Client(params, read_timeout_seconds=WAIT_SECONDS)
            clients[name] = await stack.enter_async_context(client)
        yield Connections(interface, clients)
