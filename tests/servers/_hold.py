"""The `wait_for` tool of the test servers that hold a call until the test releases it.

Imported by its sibling scripts as `_hold`: a script's own directory is first on its path.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

POLL_SECONDS = 0.02  # how often `wait_for` looks for its file
GIVE_UP_SECONDS = 300  # a test that never creates the file has failed long before this


def add_wait_for(server: MCPServer) -> None:
    """Give `server` the tool `wait_for(path)`."""

    @server.tool()
    async def wait_for(path: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Answer "released" once the file at `path` exists; `path`.waiting says the call has begun."""
        await anyio.Path(f"{path}.waiting").touch()
        with anyio.fail_after(GIVE_UP_SECONDS):
            while not await anyio.Path(path).exists():  # noqa: ASYNC110 (the test makes it)
                await anyio.sleep(POLL_SECONDS)
        return "released"
