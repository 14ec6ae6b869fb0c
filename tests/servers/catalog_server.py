"""A real MCP server whose tool list is a JSON file, for the lockfile tests; stdio when run as a script.

`CATALOG_FILE` names a JSON array of tool definitions as MCP lists them (name, description,
inputSchema, annotations, ...). The file is read again on every `tools/list`, so a test changes the
catalog between `lock` and `serve`, and at run time: `announce` sends `tools/list_changed`, and the
gateway lists again; `leave` ends the process, and the gateway lists again once it has reconnected.
Every other listed tool answers a call with "<name> answered".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

ANNOUNCE = types.Tool(
    name="announce",
    description="Tell the client that the tool list changed.",
    input_schema={"type": "object", "properties": {}},
)
LEAVE = types.Tool(
    name="leave",
    description="End the server process at once, without answering.",
    input_schema={"type": "object", "properties": {}},
)


def _listed() -> list[types.Tool]:
    spec: list[dict[str, Any]] = json.loads(Path(os.environ["CATALOG_FILE"]).read_text(encoding="utf-8"))
    return [ANNOUNCE, LEAVE, *(types.Tool.model_validate(tool) for tool in spec)]


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_listed())


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name == ANNOUNCE.name:
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(text="announced")])
    if params.name == LEAVE.name:
        os._exit(0)
    if params.name not in {tool.name for tool in _listed()}:
        return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name} answered")])


async def main() -> None:
    server = Server("catalog", on_list_tools=_list_tools, on_call_tool=_call_tool)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
