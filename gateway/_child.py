"""One child MCP server: its connection over the official SDK client, its state and its tools.

The connection lives in one task (`Child.run`) because the SDK's transports are task-group
context managers that must be exited by the task that entered them. Errors from the SDK and
its transports are translated here, once, into a child state or a gateway error.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from contextlib import AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from importlib import metadata
from typing import Any, TextIO, cast

import anyio
import anyio.to_thread
import httpx2
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from gateway._config import HttpServer, ServerConfig, StdioServer
from gateway._errors import ChildUnavailable, ToolCallError
from gateway._secrets import child_environment

__all__ = ["Child", "ChildState", "ChildStatus"]

log = logging.getLogger(__name__)

_MAX_TOOL_PAGES = 100  # a paginator that never ends must not hang startup
_STDERR_TAIL_LINES = 5  # quoted in a startup failure: usually the child's own explanation
_STDERR_LINE_CHARS = 2000
_STDERR_JOIN_SECONDS = 1.0
# The SDK's defaults for streamable HTTP: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def _client_info() -> types.Implementation:
    try:
        version = metadata.version("codemode-gateway")
    except metadata.PackageNotFoundError:
        version = "0"
    return types.Implementation(name="codemode-gateway", version=version)


class ChildState(StrEnum):
    """Where a child is in its life."""

    CONNECTING = "connecting"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ChildStatus:
    """A snapshot of one child, for `check`, logs and the MCP server."""

    name: str
    transport: str
    state: ChildState
    error: str | None
    tool_count: int
    startup_ms: float | None


class _StderrPump:
    """Forwards a child's stderr, line by line, into the gateway's log (never to stdout).

    The SDK hands `errlog` to the subprocess as its stderr, so it must be a real file: a pipe
    whose read end a daemon thread drains, so a chatty child can never block on a full pipe.
    """

    def __init__(self, child: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self.tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._child = child
        self._thread = threading.Thread(
            target=self._pump, args=(read_fd,), name=f"codemode-stderr-{child}", daemon=True
        )
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip()[:_STDERR_LINE_CHARS]
                if line:
                    self.tail.append(line)
                    log.info("child stderr", extra={"child": self._child, "line": line})

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF can arrive."""
        self.writer.close()

    async def drained_tail(self) -> str:
        """The last lines, after waiting briefly for a dead child's final output to be read."""
        await anyio.to_thread.run_sync(self._thread.join, _STDERR_JOIN_SECONDS)
        return " | ".join(self.tail)


def _members(exc: BaseException) -> tuple[BaseException, ...]:
    if isinstance(exc, BaseExceptionGroup):
        return cast("BaseExceptionGroup[BaseException]", exc).exceptions
    return ()


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the SDK's (nested) exception groups."""
    while inner := _members(exc):
        exc = next((e for e in inner if isinstance(e, Exception)), inner[0])
    return exc


class _SpawnFailed(Exception):
    """The child's command could not be started."""


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    if isinstance(exc, _SpawnFailed):
        return str(exc)
    if isinstance(exc, MCPError):
        return "closed the connection" if exc.code == types.CONNECTION_CLOSED else exc.message
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _lost_connection(exc: BaseException) -> bool:
    exc = _leaf(exc)
    if isinstance(exc, MCPError):
        return exc.code == types.CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream)


async def _list_tools(session: ClientSession) -> list[types.Tool]:
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


class Child:
    """One configured child server; `run` connects it and holds the connection until `stop`."""

    def __init__(self, name: str, server: ServerConfig, startup_timeout: float) -> None:
        self.name = name
        self.server = server
        self.startup_timeout = startup_timeout
        self.settled = anyio.Event()  # set once the child is ready or has failed
        self.finished = anyio.Event()  # set once `run` has released the connection
        self.tools: list[types.Tool] = []
        self._state = ChildState.CONNECTING
        self._error: str | None = None
        self._startup_ms: float | None = None
        self._session: ClientSession | None = None
        self._pump: _StderrPump | None = None
        self._stop = anyio.Event()
        self._startup_scope: anyio.CancelScope | None = None

    @property
    def state(self) -> ChildState:
        return self._state

    def status(self) -> ChildStatus:
        """A snapshot of this child."""
        return ChildStatus(
            self.name, self.server.transport, self._state, self._error, len(self.tools), self._startup_ms
        )

    def stop(self) -> None:
        """Ask `run` to close the connection (abandoning a connection still in progress)."""
        self._stop.set()
        if self._startup_scope is not None and self._state is ChildState.CONNECTING:
            self._startup_scope.cancel()

    async def run(self) -> None:
        """Connect, list the tools, then serve until stopped; failures are recorded, never raised."""
        started = time.monotonic()
        if self._stop.is_set():  # the pool closed before this task got to run
            self._fail("stopped before it connected", started)
            self.finished.set()
            return
        failure: BaseException | None = None
        startup = self._startup_scope = anyio.CancelScope(
            deadline=anyio.current_time() + self.startup_timeout
        )
        try:
            with startup:
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    tools = await _list_tools(session)
                    startup.deadline = math.inf  # connected: from here on only `stop` ends the connection
                    self._ready(session, tools, started)
                    await self._stop.wait()
        except Exception as exc:
            failure = exc
        finally:
            self._session = None
            self.finished.set()
            if not self.settled.is_set() and failure is None and not startup.cancelled_caught:
                self._fail("stopped before it connected", started)  # cancelled from outside
        if self.settled.is_set():
            if failure is not None and self._state is ChildState.READY:
                self._fail(f"connection lost: {_describe(failure)}", None)
            return
        if self._stop.is_set():
            reason = "stopped before it connected"
        elif failure is None:
            reason = f"did not connect within {self.startup_timeout:g} s (startup_timeout_seconds)"
        elif not isinstance(self.server, StdioServer) and isinstance(_leaf(failure), httpx2.TransportError):
            reason = f"cannot reach {self.server.url}: {_describe(failure)}"
        else:
            reason = _describe(failure)
        if self._pump is not None and (tail := await self._pump.drained_tail()):
            reason += f"; stderr: {tail}"
        self._fail(reason, started)

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        server = self.server
        if isinstance(server, StdioServer):
            self._pump = _StderrPump(self.name)
            # Built, not inherited: the gateway's own tokens reach only the children they are named for.
            env = child_environment(server.env, server.env_passthrough)
            params = StdioServerParameters(command=server.command, args=server.args, env=env, cwd=server.cwd)
            try:
                read, write = await stack.enter_async_context(stdio_client(params, errlog=self._pump.writer))
            except OSError as exc:
                raise _SpawnFailed(f"cannot start {server.command!r}: {exc.strerror or exc}") from exc
            finally:
                self._pump.close_writer()
        elif isinstance(server, HttpServer):
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=server.headers, timeout=_HTTP_TIMEOUT)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=http)
            )
        else:
            read, write = await stack.enter_async_context(
                sse_client(server.url, headers=server.headers or None)
            )
        session = await stack.enter_async_context(ClientSession(read, write, client_info=_client_info()))
        await session.initialize()
        return session

    def _ready(self, session: ClientSession, tools: list[types.Tool], started: float) -> None:
        self._session, self.tools = session, tools
        self._state, self._startup_ms = ChildState.READY, round((time.monotonic() - started) * 1000, 1)
        self.settled.set()
        log.info(
            "child ready", extra={"child": self.name, "tools": len(tools), "startup_ms": self._startup_ms}
        )

    def _fail(self, reason: str, started: float | None) -> None:
        self._session, self._state, self._error = None, ChildState.FAILED, reason
        if started is not None:
            self._startup_ms = round((time.monotonic() - started) * 1000, 1)
        self.settled.set()
        log.warning("child failed", extra={"child": self.name, "error": reason})

    def unavailable(self) -> ChildUnavailable:
        """The error for a call to this child while it cannot serve."""
        return ChildUnavailable(f"child server {self.name!r} is unavailable ({self._state}): {self._error}")

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call one of this child's tools, waiting first for a child that is still connecting."""
        await self.settled.wait()
        session = self._session
        if session is None:
            raise self.unavailable()
        try:
            result = await session.call_tool(tool, arguments)
        except Exception as exc:
            if _lost_connection(exc):
                self._fail(f"connection lost: {_describe(exc)}", None)
                self.stop()  # release the transport (and the process) of a dead connection
                raise self.unavailable() from exc
            raise ToolCallError(f"{self.name}.{tool}: {_describe(exc)}") from exc
        return result
