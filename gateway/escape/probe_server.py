"""A tiny real MCP server for the policy and secret cases of `sandbox-test`, run as a child by the suite.

Its tools touch nothing: they answer from their arguments and the process's environment, so the
suite can check what the gateway's policy lets through and what its redaction lets out.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

__all__ = ["build"]

_READ = ToolAnnotations(read_only_hint=True)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True)


def build() -> MCPServer:
    """The probe server's tools (reads, writes and an admin tool that the suite's policy constrains)."""
    server = MCPServer("probe")

    @server.tool(annotations=_READ)
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool(annotations=_READ)
    def read_note(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to read a note (nothing is read)."""
        return f"note {name}"

    @server.tool(annotations=_WRITE)
    def write_note(name: str, text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to write a note (nothing is written)."""
        return f"wrote {len(text)} characters to {name}"

    @server.tool(annotations=_WRITE)
    def delete_all() -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to delete everything (nothing is deleted)."""
        return "deleted everything"

    @server.tool(annotations=_WRITE)
    def internal_admin() -> str:  # pyright: ignore[reportUnusedFunction]
        """An administrative tool the suite's policy hides."""
        return "admin"

    @server.tool(annotations=_READ)
    def count() -> int:  # pyright: ignore[reportUnusedFunction]
        """A call the suite's policy rate-limits."""
        return 1

    @server.tool(annotations=_READ)
    def reveal(name: str) -> str | None:  # pyright: ignore[reportUnusedFunction]
        """The value of one of this process's environment variables (a child echoing a secret)."""
        return os.environ.get(name)

    @server.tool(annotations=_READ)
    def reveal_in_error(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Fail with the value of an environment variable in the error message."""
        raise ToolError(f"cannot proceed with {os.environ.get(name)}")

    return server


if __name__ == "__main__":
    build().run()
