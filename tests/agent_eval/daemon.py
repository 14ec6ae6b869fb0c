"""The servers' side of the agent's CLI: open an interface's connections, serve requests from the CLI
over a unix socket (or answer one request in-process), and render results as a client shows them.

`render` is the one rendering rule for every interface. It is what Claude Code shows the model:
`JSON.stringify(structuredContent)` for a successful result that has structured content, else the text
content (a non-text block as a short placeholder), errors included. It reads no field of any envelope,
so a change in what the gateway (or a child) returns is measured as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.agent_eval.interfaces import Connections, connect
from tests.agent_eval.layout import Interface, socket_path

__all__ = ["MAX_MESSAGE_BYTES", "answer_once", "render", "render_tools", "serve"]

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
IDLE_SECONDS = 4 * 3600.0  # a background server left running by a finished trial ends by itself


def _block(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type} {block.mime_type}, {len(block.data)} base64 characters]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}]"
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return resource.text
    return f"[resource {resource.uri}, {len(resource.blob)} base64 characters]"


def _as_javascript_numbers(value: Any) -> Any:
    """`value` with integral floats as ints, since JSON.stringify writes 60.0 as `60`."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _as_javascript_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_javascript_numbers(v) for v in value]
    return value


def render(result: types.CallToolResult) -> str:
    """What a client shows the model of a tool result (Claude Code's rule, see the module docstring)."""
    if not result.is_error and result.structured_content is not None:
        shown = _as_javascript_numbers(result.structured_content)
        return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
    return "\n".join(_block(block) for block in result.content)


def render_tools(tools: list[types.Tool]) -> str:
    """Tool definitions as a client gives them to the model: name, description, input schema; one a line."""
    return "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for t in tools
    )


async def handle(connections: Connections, request: dict[str, Any]) -> dict[str, Any]:
    """Serve one request (`{"op": "list", "server"}` or `{"op": "call", "tool", "arguments"}`): text, ok."""
    try:
        if request["op"] == "list":
            return {"text": render_tools(await connections.list_tools(request.get("server"))), "ok": True}
        result = await connections.call(request["tool"], request["arguments"])
        return {"text": render(result), "ok": not result.is_error}
    except (MCPError, LookupError) as exc:
        return {"text": f"Error: {exc}", "ok": False}
    except Exception as exc:  # a server's connection failed: the agent reads it as an error and may go on
        return {"text": f"Error: {type(exc).__name__}: {exc}", "ok": False}


async def answer_once(interface: Interface, world: Path, request: dict[str, Any]) -> dict[str, Any]:
    """Start the interface's servers (for `direct`, only the one the request needs), serve one request."""
    server = None
    if interface == "direct":
        server = request.get("server") if request["op"] == "list" else request["tool"].partition(".")[0]
    async with connect(interface, world, server) as connections:
        return await handle(connections, request)


async def serve(interface: Interface, world: Path) -> None:
    """Keep the interface's connections open and serve the CLI's requests on the world's socket, one at a
    time, until a `stop` request or IDLE_SECONDS without a request."""
    path = socket_path(world, interface)
    path.unlink(missing_ok=True)
    lock = anyio.Lock()
    async with connect(interface, world) as connections:
        running = anyio.CancelScope(deadline=anyio.current_time() + IDLE_SECONDS)

        async def reply(stream: SocketStream) -> None:
            async with stream:
                line = await BufferedByteReceiveStream(stream).receive_until(b"\n", MAX_MESSAGE_BYTES)
                request = json.loads(line)
                if request["op"] == "stop":
                    await stream.send(b'{"text": "stopped", "ok": true}\n')
                    running.cancel()
                    return
                async with lock:
                    answer = await handle(connections, request)
                running.deadline = anyio.current_time() + IDLE_SECONDS
                await stream.send(json.dumps(answer).encode() + b"\n")

        listener = await anyio.create_unix_listener(path)
        try:
            with running:
                async with listener:
                    await listener.serve(reply)
        finally:
            path.unlink(missing_ok=True)
