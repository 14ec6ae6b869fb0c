"""A tiny real MCP server for the child-pool tests: stdio when run as a script, ASGI apps in-process."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    """The server: `echo` answers, `die` ends the process mid-call (a child lost after connecting)."""
    server = MCPServer("tiny")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool()
    def die() -> str:  # pyright: ignore[reportUnusedFunction]
        """Exit the server process at once, without answering."""
        os._exit(3)

    return server


if __name__ == "__main__":
    print("tiny server starting", file=sys.stderr, flush=True)
    build().run()
