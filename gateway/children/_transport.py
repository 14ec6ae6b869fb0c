"""One connection to a child server over the SDK's client transports, and the translation of its errors.

`open_session` spawns a stdio child and reads its messages with a cap (`_stdio`), or opens its
streamable HTTP or SSE transport with the same cap (`_http_cap`), and initializes an MCP session
over it; `ChildConnection` holds that connection's resources and records the first reason it must
end, noticed by the watched read stream or by an HTTP response. `describe_error`,
`leaf_error` and `is_connection_lost` look through the SDK's nested exception groups so that the
`Child` supervisor can turn any failure into a child state or a gateway error in one place.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Protocol, Self, cast

import anyio
import httpx2
import pydantic
from mcp import types
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from gateway.children._env import child_environment, find_command
from gateway.children._http_cap import LEGACY_SSE_EVENT_BYTES, AnswerCap
from gateway.children._process import StderrPump, end_process_group, signal_process_group
from gateway.children._stdio import open_stdio_child
from gateway.children.config import HttpServer, ServerConfig, StdioServer
from gateway.shared import PACKAGE_NAME, leaf_error, package_version
from gateway.telemetry import inject_trace_headers

__all__ = [
    "ChildConnection",
    "QuietSdkParseErrors",
    "SpawnFailed",
    "declares_resources",
    "describe_error",
    "is_connection_lost",
    "list_all_tools",
    "offers_resources",
    "open_session",
    "redacted_tool",
]

# The child module's logger: every record about a child keeps the one logger name it always had.
log = logging.getLogger("gateway.children")

_MAX_TOOL_PAGES = 100  # a paginator that never ends must not hang startup
_GARBAGE_CHARS = 200
# The SDK's defaults for streamable HTTP: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_SDK_PARSE_ERROR = "Failed to parse JSONRPC message from server"
# The gateway reads a stdio child itself with POSIX process groups; on Windows the SDK's transport
# spawns it (in a job object) and reads its lines uncapped.
_SDK_STDIO = sys.platform == "win32"
_CLOSED = "closed the connection"


class QuietSdkParseErrors(logging.Filter):
    """Drops the SDK's traceback per unparsable stdout line: `_Watched` logs them, briefly and bounded.

    For the `mcp.client.stdio` logger (the commands that start children add it: `quiet_sdk_parse_errors`).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _SDK_PARSE_ERROR


def _client_info() -> types.Implementation:
    return types.Implementation(name=PACKAGE_NAME, version=package_version())


def _unparsed_text(exc: Exception) -> str:
    text: object = None
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors(include_url=False)
        text = errors[0].get("input") if errors else None
    if isinstance(text, bytes):  # a line the gateway's own reader could not parse as JSON
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _GARBAGE_CHARS else text[: _GARBAGE_CHARS - 3] + "..."


class ChildConnection:
    """One connection's resources and fate: its session, process group, and why it must end."""

    def __init__(self, child: str, poke: Callable[[], None]) -> None:
        self.child = child
        self.session: ClientSession | None = None
        self.pump: StderrPump | None = None
        self.pgid: int | None = None
        self.end_reason: str | None = None  # set once: the first reason this connection must end
        self.kill = False  # the child is wedged: signal its group rather than wait for it
        self.timeouts = 0  # calls in a row abandoned at their deadline without an answer
        self.garbage: str | None = None
        self.garbage_count = 0
        self._poke = poke

    def end(self, reason: str, *, kill: bool = False) -> None:
        if self.end_reason is None:
            self.end_reason, self.kill = reason, kill
            self._poke()

    def closed(self) -> None:
        self.end(f"connection lost: {_CLOSED}")

    async def on_http_response(self, response: httpx2.Response) -> None:
        # The spec's signal that a streamable HTTP server no longer knows our session (it restarted):
        # only a new session helps, whatever error body the server chose.
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self.end("connection lost: the server no longer knows the session (HTTP 404)")

    def unparsable(self, exc: Exception) -> None:
        # MCP forbids non-protocol output on stdout, but stray prints are common: log and drop them.
        self.garbage = _unparsed_text(exc)
        self.garbage_count += 1
        count = self.garbage_count
        if count <= 3 or count % 1000 == 0:
            log.warning(
                "child wrote a message that is not MCP JSON",
                extra={"child": self.child, "line": self.garbage, "count": count},
            )

    def terminate(self) -> None:
        """SIGTERM the whole group: a wedged child may never read its closed stdin."""
        if self.pgid is not None:
            signal_process_group(self.pgid, signal.SIGTERM)

    async def reap(self) -> None:
        """End what is left of the child's process group once the SDK has stopped its leader."""
        # The SDK signals the group only when the leader outlives its grace period, so a leader
        # that exits at once (an `npx`-style wrapper) can leave grandchildren running.
        if self.pgid is not None:
            with anyio.CancelScope(shield=True):
                await end_process_group(self.pgid)

    async def stderr_tail(self) -> str:
        return await self.pump.drained_tail() if self.pump is not None else ""


class _Receiver(Protocol):
    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...


class _Sender(Protocol):
    """What a `ClientSession` writes to (the SDK's write-stream protocol, which it does not export)."""

    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None: ...


class _Watched:
    """The transport's read stream, watched: notices the end of the connection, drops unparsable lines."""

    def __init__(self, inner: _Receiver, connection: ChildConnection) -> None:
        self._inner = inner
        self._connection = connection

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)  # the dispatcher reads it when present

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._connection.closed()
                raise
            if not isinstance(item, Exception):
                return item
            self._connection.unparsable(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class SpawnFailed(Exception):
    """The child's command could not be started: retrying cannot help."""


def describe_error(exc: BaseException) -> str:
    exc = leaf_error(exc)
    if isinstance(exc, SpawnFailed):
        return str(exc)
    if isinstance(exc, MCPError):
        return _CLOSED if exc.code == types.CONNECTION_CLOSED else exc.message
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_connection_lost(exc: BaseException) -> bool:
    exc = leaf_error(exc)
    if isinstance(exc, MCPError):
        return exc.code == types.CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream)


def _redact_texts(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = json.dumps(value)  # a numeric secret as a schema's default or example
        redacted = redact(text)
        return value if redacted == text else redacted
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {redact(key): _redact_texts(item, redact) for key, item in items}
    if isinstance(value, list):
        return [_redact_texts(item, redact) for item in cast("list[Any]", value)]
    return value


def redacted_tool(tool: types.Tool, redact: Callable[[str], str]) -> types.Tool:
    """`tool` with `redact` applied to every text a child wrote in it but its name, which calls use."""
    data = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return types.Tool.model_validate({**_redact_texts(data, redact), "name": tool.name})


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    capabilities = session.server_capabilities
    if capabilities is not None and capabilities.tools is None:
        return []  # a server without tools (prompts or resources only) is still a ready child
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise RuntimeError(f"tools/list returned more than {_MAX_TOOL_PAGES} pages")


def declares_resources(session: ClientSession) -> bool:
    """Whether the child declared the MCP resources capability when it connected."""
    capabilities = session.server_capabilities
    return capabilities is not None and capabilities.resources is not None


async def offers_resources(session: ClientSession) -> bool:
    """Whether the child lists any resource or resource template (the first page of each is enough).

    Declaring the capability is not enough: every server built on the SDK's MCPServer declares it,
    with nothing behind it.
    """
    if not declares_resources(session):
        return False
    page = await session.list_resources()
    if page.resources or page.next_cursor:
        return True
    templates = await session.list_resource_templates()
    return bool(templates.resource_templates or templates.next_cursor)


async def _open_stdio(
    stack: AsyncExitStack, name: str, server: StdioServer, connection: ChildConnection, max_message_bytes: int
) -> tuple[_Receiver, _Sender]:
    """Spawn the child, entered on `stack`: its stderr to the log, its process group on `connection`."""
    pump = connection.pump = StderrPump(name)
    # Built, not inherited: the gateway's own tokens reach only the children they are named for.
    env = child_environment(server.env, server.env_passthrough)
    found = find_command(server.command, env.get("PATH"))
    command = found or server.command
    try:
        if _SDK_STDIO:
            params = StdioServerParameters(command=command, args=server.args, env=env, cwd=server.cwd)
            return await stack.enter_async_context(stdio_client(params, errlog=pump.writer))
        child = await stack.enter_async_context(
            open_stdio_child(
                command,
                server.args,
                env=env,
                cwd=server.cwd,
                errlog=pump.writer,
                max_message_bytes=max_message_bytes,
                child=name,
            )
        )
    except (OSError, ValueError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        if isinstance(exc, FileNotFoundError) and found is None:
            detail = (
                "not found on the PATH children get, nor beside the gateway's Python; give its absolute "
                "path as the entry's command, or start the gateway with its directory on PATH"
            )
        raise SpawnFailed(f"cannot start {server.command!r}: {detail}") from exc
    finally:
        pump.close_writer()
    connection.pgid = child.pid
    return child.read, child.write


async def open_session(
    stack: AsyncExitStack,
    name: str,
    server: ServerConfig,
    connection: ChildConnection,
    message_handler: MessageHandlerFnT,
    max_message_bytes: int,
) -> ClientSession:
    """Open the child's transport and an initialized session over it, both entered on `stack`.

    No message from the child past `max_message_bytes` reaches the SDK: an answer past it is
    replaced by a JSON-RPC error naming the cap, anything else is dropped.
    """
    if isinstance(server, StdioServer):
        read, write = await _open_stdio(stack, name, server, connection, max_message_bytes)
    elif isinstance(server, HttpServer):
        cap = AnswerCap(name, max_message_bytes)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=server.headers,
                timeout=_HTTP_TIMEOUT,
                event_hooks={
                    # The trace context the SDK writes into a request's `_meta`, as W3C headers too.
                    "request": [cap.on_request, inject_trace_headers],
                    "response": [connection.on_http_response, cap.on_response],
                },
            )
        )
        read, write = await stack.enter_async_context(
            streamable_http_client(server.url, http_client=http, max_sse_event_size=cap.sdk_event_limit)
        )
    else:
        # The SDK caps each event of a legacy SSE child at 1 MiB itself (and ends the connection past it).
        cap = AnswerCap(name, min(max_message_bytes, LEGACY_SSE_EVENT_BYTES))
        read, write = await stack.enter_async_context(
            sse_client(server.url, headers=server.headers or None, httpx_client_factory=cap.client)
        )
    session = await stack.enter_async_context(
        ClientSession(
            _Watched(read, connection),
            write,
            client_info=_client_info(),
            message_handler=message_handler,
        )
    )
    await session.initialize()
    return session
