"""A gateway whose config was refused, serving over stdio: it tells whoever is connected why, and
serves nothing else.

An MCP client that starts the gateway (`claude mcp add codemode -- codemode-gateway serve --config
x.json`) shows only "failed to connect" for a process that exits at start, and the reason sits in
the client's log. So over stdio a refused config still answers: `initialize` carries the reason in
its instructions, `search_docs` and `execute_code` are listed, and every tool call answers with the
reason as a tool error. It starts no child and no sandbox, and ends when the client closes stdin (or
at SIGTERM or SIGINT). Over HTTP the gateway refuses to start instead: an operator's service must
not come up broken.
"""

from __future__ import annotations

import logging
import os
from functools import partial
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from gateway.errors import ConfigError
from gateway.server._stdio import cancel_on_signals, stdio_files
from gateway.shared import PACKAGE_NAME, package_version

__all__ = ["refusal_text", "refused_config_server", "run_refused_config", "serve_refused_config"]

log = logging.getLogger("gateway.server")

TOOL_NAMES = ("search_docs", "execute_code")
_UNAVAILABLE = (
    "Unavailable: codemode-gateway refused its config, so this tool does nothing. Call it to read what is "
    "wrong with the config and what to do."
)


def refusal_text(error: ConfigError, config_file: str | os.PathLike[str] | None = None) -> str:
    """What the client is told: that nothing is served, the config's problems as `check` prints
    them, and what to do."""
    check = "codemode-gateway check" + (f" --config {os.path.abspath(config_file)}" if config_file else "")
    return "\n".join(
        [
            "codemode-gateway refused its config: it serves nothing until the config is fixed and this "
            "connection restarted.",
            f"codemode-gateway: {error}",
            f"Fix the config (`{check}` prints the same), then restart the connection to this server "
            "(in Claude Code: /mcp, then Reconnect).",
        ]
    )


def refused_config_server(text: str) -> Server[Any]:
    """A lowlevel MCP server whose instructions are `text`, listing the gateway's two tools, each of
    which answers any call with `text` as a tool error."""
    schema = {"type": "object"}  # any arguments: every call is answered with the refusal
    tools = [types.Tool(name=name, description=_UNAVAILABLE, input_schema=schema) for name in TOOL_NAMES]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

    return Server(
        PACKAGE_NAME,
        version=package_version(),
        instructions=text,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_refused_config(error: ConfigError, config_file: str | os.PathLike[str] | None = None) -> None:
    """Serve the refusal of `config_file` over stdin/stdout until the client closes stdin or
    SIGTERM/SIGINT arrives; the reason is logged first."""
    log.error(
        "config refused: the gateway serves nothing, and tells the connected client why until it disconnects",
        extra={"error": str(error)},
    )
    server = refused_config_server(refusal_text(error, config_file))
    async with anyio.create_task_group() as task_group:
        await task_group.start(cancel_on_signals, task_group.cancel_scope)
        async with (
            stdio_files() as (stdin, stdout),
            stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream),
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        task_group.cancel_scope.cancel()  # stdin closed: stop watching for signals


def run_refused_config(error: ConfigError, config_file: str | os.PathLike[str] | None = None) -> None:
    """Blocking entry point for `codemode-gateway serve` over stdio with a refused config."""
    anyio.run(partial(serve_refused_config, error, config_file))
