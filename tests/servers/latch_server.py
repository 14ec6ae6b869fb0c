"""A real MCP server for the reload tests, over stdio: a call that waits for the test, and its pid.

`wait_for(path)` answers once the file at `path` exists, so a test holds an execution in flight
exactly as long as it needs to (a config reload lands meanwhile) and releases it by creating the file;
it creates `path`.waiting first, so the test knows the call has reached the server.
"""

from __future__ import annotations

import os
import sys

from _hold import add_wait_for  # this directory: see _hold.py
from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    """The server: `wait_for` answers once a file exists, `pid` says which process answers."""
    server = MCPServer("latch")

    add_wait_for(server)

    @server.tool()
    def pid() -> int:  # pyright: ignore[reportUnusedFunction]
        """This server's process id."""
        return os.getpid()

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    return server


if __name__ == "__main__":
    print("latch server starting", file=sys.stderr, flush=True)
    build().run()
