"""The MCP face the client sees: `search_docs`, `execute_code` and the exposed child tools, over stdio
or streamable HTTP."""

from gateway.server._http import run_http, serve_http
from gateway.server._server import build_server, run_stdio, serve_stdio

__all__ = ("build_server", "run_http", "run_stdio", "serve_http", "serve_stdio")
