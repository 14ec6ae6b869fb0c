"""The MCP face the client sees: two tools, `search_docs` and `execute_code`, over stdio."""

from gateway.server._server import OUTPUT_SCHEMA, build_server, run_stdio, serve_stdio

__all__ = ("OUTPUT_SCHEMA", "build_server", "run_stdio", "serve_stdio")
