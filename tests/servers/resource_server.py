"""A real MCP server with resources, for the resource tests; stdio when run as a script.

It is built on the SDK's lowlevel Server, since MCPServer lists every resource on one page and the
tests page through cursors. It offers:

    note://readme          text
    image://pixel.png      a 1x1 PNG (binary)
    secret://token         text holding RESOURCE_TOKEN, a secret the gateway must redact
    broken://store         a read that fails with an error quoting RESOURCE_TOKEN
    file:///dir            one read answering two files: file:///dir/a.txt and file:///dir/private.txt
    docs://page/<n>        RESOURCE_PAGES documents (7 by default), also a template `docs://page/{n}`
                           whose reads answer any n

and lists RESOURCE_PAGE_SIZE resources per page (3 by default); with RESOURCE_ENDLESS set, every
page has a next cursor. An unknown URI is MCP's "resource not found" (-32002). Its one tool, `forget`,
drops every resource and template and sends `notifications/resources/list_changed`.
"""

from __future__ import annotations

import base64
import os
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""What image://pixel.png holds."""

FORGET = types.Tool(
    name="forget",
    description="Drop every resource and template, and say that the list changed.",
    input_schema={"type": "object", "properties": {}},
)
FORGOTTEN: list[bool] = []  # `forget` was called


def _token() -> str:
    return os.environ.get("RESOURCE_TOKEN", "no-token")


def _listed() -> list[types.Resource]:
    if FORGOTTEN:
        return []
    pages = int(os.environ.get("RESOURCE_PAGES", "7"))
    fixed = [
        types.Resource(uri="note://readme", name="readme", title="Read me", mime_type="text/plain"),
        types.Resource(uri="image://pixel.png", name="pixel", mime_type="image/png", size=len(PIXEL_PNG)),
        types.Resource(uri="secret://token", name="token", description=f"holds {_token()}"),
        types.Resource(uri="broken://store", name="store"),
        types.Resource(uri="file:///dir", name="dir"),
    ]
    return fixed + [types.Resource(uri=f"docs://page/{n}", name=f"page {n}") for n in range(pages)]


async def _list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    size = int(os.environ.get("RESOURCE_PAGE_SIZE", "3"))
    start = int(params.cursor) if params is not None and params.cursor else 0
    listed = _listed()
    end = start + size
    more = end < len(listed) or bool(os.environ.get("RESOURCE_ENDLESS"))
    return types.ListResourcesResult(resources=listed[start:end], next_cursor=str(end) if more else None)


async def _list_templates(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template="docs://page/{n}", name="page", description="Any page by number", mime_type="text/plain"
    )
    return types.ListResourceTemplatesResult(resource_templates=[] if FORGOTTEN else [template])


def _text(uri: str, text: str) -> types.TextResourceContents:
    return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)


async def _read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = params.uri
    if uri == "note://readme":
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            _text(uri, "Read me first.")
        ]
    elif uri == "image://pixel.png":
        blob = base64.b64encode(PIXEL_PNG).decode()
        contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=blob)]
    elif uri == "secret://token":
        contents = [_text(uri, f"token={_token()}")]
    elif uri == "broken://store":
        raise MCPError(types.INTERNAL_ERROR, f"the store refused token {_token()}")
    elif uri == "file:///dir":
        contents = [_text("file:///dir/a.txt", "a"), _text("file:///dir/private.txt", "private")]
    elif uri.startswith("docs://page/") and uri.removeprefix("docs://page/").isdigit():
        contents = [_text(uri, f"page {uri.removeprefix('docs://page/')}")]
    else:
        raise MCPError(-32002, f"Resource not found: {uri}")
    return types.ReadResourceResult(contents=contents)


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[FORGET])


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    FORGOTTEN.append(True)
    await ctx.session.send_resource_list_changed()
    return types.CallToolResult(content=[types.TextContent(text="forgotten")])


async def main() -> None:
    server = Server(
        "resources",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        on_list_resources=_list_resources,
        on_list_resource_templates=_list_templates,
        on_read_resource=_read_resource,
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
