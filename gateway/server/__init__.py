"""The MCP face the client sees: `search_docs`, `execute_code` and the exposed child tools, over stdio
or streamable HTTP."""

from gateway.server._http import run_http, serve_http
from gateway.server._refused_config import run_refused_config, serve_refused_config
from gateway.server._server import build_server, run_stdio, serve_stdio

__all__ = (
    "build_server",
    "run_http",
    "run_refused_config",
    "run_stdio",
    "serve_http",
    "serve_refused_config",
    "serve_stdio",
)
