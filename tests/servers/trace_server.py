"""A real MCP server that shows the trace context each call reached it with: stdio when run as a
script, an ASGI app in-process (`build().streamable_http_app()`)."""

from __future__ import annotations

import sys
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    """The server: `trace_context` answers the `_meta.traceparent` and the `traceparent` HTTP header its
    request carried; `fail` answers with an error (isError)."""
    server = MCPServer("trace")

    @server.tool()
    def trace_context(ctx: Context) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        """The trace context of this request: in its `_meta`, and in its HTTP headers (None on stdio)."""
        meta: dict[str, Any] = dict(ctx.request_context.meta or {})
        headers = ctx.headers or {}
        return {
            "meta": meta.get("traceparent"),
            "header": headers.get("traceparent"),
            "transport": "http" if ctx.headers is not None else "stdio",
        }

    @server.tool()
    def fail() -> types.CallToolResult:  # pyright: ignore[reportUnusedFunction]
        """Fail as a tool does: an answer with isError."""
        return types.CallToolResult(content=[types.TextContent(text="this tool always fails")], is_error=True)

    return server


if __name__ == "__main__":
    print("trace server starting", file=sys.stderr, flush=True)
    build().run()
