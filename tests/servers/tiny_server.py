"""A tiny real MCP server for the child-pool tests: stdio when run as a script, ASGI apps in-process."""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    """The server: `echo` answers, `env` shows its environment, `die` ends the process mid-call; its
    instructions are TINY_INSTRUCTIONS, if set; TINY_PLAIN_ECHO adds `plain_echo`."""
    server = MCPServer("tiny", instructions=os.environ.get("TINY_INSTRUCTIONS"))

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool()
    def env() -> str:  # pyright: ignore[reportUnusedFunction]
        """The server process's environment, as a JSON object."""
        return json.dumps(dict(os.environ))

    note = os.environ.get("TINY_TOOL_NOTE")
    if note:  # a child writing a credential into its own docs, description and schema alike

        @server.tool(description=f"Look something up ({note}).")
        def lookup(key: str = note) -> str:  # pyright: ignore[reportUnusedFunction]
            return key

    if os.environ.get("TINY_PLAIN_ECHO"):  # a tool without an output schema, as most children's are

        @server.tool(structured_output=False)
        def plain_echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
            """Return the text unchanged, declaring no output schema."""
            return text

    @server.tool()
    def die() -> str:  # pyright: ignore[reportUnusedFunction]
        """Exit the server process at once, without answering."""
        os._exit(3)

    return server


if __name__ == "__main__":
    print("tiny server starting", file=sys.stderr, flush=True)
    build().run()
