"""The MCP face the client sees: `search_docs`, `execute_code` and the exposed child tools, over stdio."""

from gateway.server._server import OUTPUT_SCHEMA, build_server, run_stdio, serve_stdio

__all__ = ("OUTPUT_SCHEMA", "build_server", "run_stdio", "serve_stdio")
