"""A real MCP server with countable side effects, over stdio: every `append` adds a line to a file.

The file is `LEDGER_FILE` from the environment, so a test counts exactly how many calls reached
the server, across rounds, restarts and gateway processes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from _hold import add_wait_for  # this directory: see _hold.py
from mcp.server.mcpserver import MCPServer


def _ledger() -> Path:
    return Path(os.environ["LEDGER_FILE"])


def build() -> MCPServer:
    """The server: `append` and `note` record an entry, `entries` lists them, `slow` answers later,
    `wait_for` once a file exists."""
    server = MCPServer("ledger")

    def add(entry: str) -> int:
        with _ledger().open("a", encoding="utf-8") as ledger:
            ledger.write(entry + "\n")
        return len(_ledger().read_text(encoding="utf-8").splitlines())

    @server.tool()
    def append(entry: str) -> int:  # pyright: ignore[reportUnusedFunction]
        """Add an entry to the ledger; returns how many entries it holds now."""
        return add(entry)

    @server.tool()
    def note(entry: str) -> int:  # pyright: ignore[reportUnusedFunction]
        """The same as append, under another name (one a policy can leave unapproved)."""
        return add(entry)

    @server.tool()
    def entries() -> list[str]:  # pyright: ignore[reportUnusedFunction]
        """Every entry in the ledger, oldest first."""
        ledger = _ledger()
        return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []

    @server.tool()
    async def slow(seconds: float) -> str:  # pyright: ignore[reportUnusedFunction]
        """Answer after `seconds`."""
        await anyio.sleep(seconds)
        return "done"

    add_wait_for(server)

    return server


if __name__ == "__main__":
    print("ledger server starting", file=sys.stderr, flush=True)
    build().run()
