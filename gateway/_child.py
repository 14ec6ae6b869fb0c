"""One child MCP server: a supervisor task that connects it over the official SDK client, keeps it
connected (reconnecting with backoff after failures), refreshes its tools, and serves its calls.

The connection lives in one task (`Child.run`) because the SDK's transports are task-group
context managers that must be exited by the task that entered them. Errors from the SDK and
its transports are translated here, once, into a child state or a gateway error.
"""

from __future__ import annotations

import logging
import math
import os
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from enum import StrEnum
from importlib import metadata
from types import TracebackType
from typing import Any, Protocol, Self, TextIO, cast

import anyio
import anyio.to_thread
import httpx2
import pydantic
from mcp import types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from gateway._config import HttpServer, RestartPolicy, ServerConfig, StdioServer
from gateway._errors import ChildUnavailable, ToolCallError
from gateway._secrets import child_environment

__all__ = ["Child", "ChildState", "ChildStatus", "backoff_delay"]

log = logging.getLogger(__name__)

_MAX_TOOL_PAGES = 100  # a paginator that never ends must not hang startup
_STDERR_TAIL_LINES = 5  # quoted in a failure: usually the child's own explanation
_STDERR_LINE_CHARS = 2000
_STDERR_READ_BYTES = 64 * 1024  # one read's cap: a line without newlines never grows memory
_STDERR_LOG_LINES_PER_SECOND = 100  # past this a flooding child's lines are counted, not logged
_STDERR_JOIN_SECONDS = 1.0
_GARBAGE_CHARS = 200
_GROUP_GRACE_SECONDS = 1.0  # SIGTERM to SIGKILL for what the SDK left of a process group
_GROUP_POLL_SECONDS = 0.01
# The SDK's defaults for streamable HTTP: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_SDK_PARSE_ERROR = "Failed to parse JSONRPC message from server"
_CLOSED = "closed the connection"


class _QuietParseErrors(logging.Filter):
    """Drops the SDK's traceback per unparsable stdout line: `_Watched` logs them, briefly and bounded."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _SDK_PARSE_ERROR


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())


def _client_info() -> types.Implementation:
    try:
        version = metadata.version("codemode-gateway")
    except metadata.PackageNotFoundError:
        version = "0"
    return types.Implementation(name="codemode-gateway", version=version)


class ChildState(StrEnum):
    """Where a child is in its life."""

    IDLE = "idle"  # lazy and not running: the next call (or a search naming it) starts it
    CONNECTING = "connecting"  # first start (or a lazy start): calls wait for it
    READY = "ready"
    RECONNECTING = "reconnecting"  # down, another attempt is due: calls fail fast
    FAILED = "failed"  # down for good: not startable, out of attempts, or restarts are off


@dataclass(frozen=True, slots=True)
class ChildStatus:
    """A snapshot of one child, for `check`, logs and the MCP server."""

    name: str
    transport: str
    state: ChildState
    error: str | None
    tool_count: int
    startup_ms: float | None
    attempt: int = 0  # while reconnecting: the attempt that is due or under way
    tools_version: int = 0  # bumped whenever the tool list changes, so the catalog is rebuilt


def backoff_delay(policy: RestartPolicy, attempt: int, draw: Callable[[], float] = random.random) -> float:
    """Seconds before reconnect `attempt` (1-based): doubling from the initial delay up to the cap."""
    # Drawn between half and all of it, so that children lost together do not retry in lockstep.
    nominal = min(policy.max_seconds, policy.initial_seconds * 2.0 ** min(attempt - 1, 64))
    return nominal * (0.5 + 0.5 * draw())


class _StderrPump:
    """Forwards a child's stderr, line by line, into the gateway's log (never to stdout).

    The SDK hands `errlog` to the subprocess as its stderr, so it must be a real file: a pipe
    whose read end a daemon thread drains, so a chatty child can never block on a full pipe.
    Memory stays bounded whatever the child writes: reads are capped, a long line is cut, the
    tail keeps a few lines and a flood is counted rather than logged.
    """

    def __init__(self, child: str) -> None:
        read_fd, write_fd = os.pipe()
        info = os.fstat(write_fd)
        self.pipe_id = (info.st_dev, info.st_ino)  # how /proc shows this pipe in the child's fd table
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self.tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._child = child
        self._window = 0.0
        self._logged = 0
        self._dropped = 0
        self._thread = threading.Thread(
            target=self._pump, args=(read_fd,), name=f"codemode-stderr-{child}", daemon=True
        )
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            continued = False
            while raw := pipe.readline(_STDERR_READ_BYTES):
                if not continued:  # the rest of an over-long line is read and dropped
                    self._line(raw[: _STDERR_LINE_CHARS * 4].decode("utf-8", "replace"))
                continued = not raw.endswith(b"\n")
        self._report_dropped()

    def _line(self, text: str) -> None:
        line = text.rstrip()[:_STDERR_LINE_CHARS]
        if not line:
            return
        self.tail.append(line)
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._report_dropped()
            self._window, self._logged = now, 0
        self._logged += 1
        if self._logged <= _STDERR_LOG_LINES_PER_SECOND:
            log.info("child stderr", extra={"child": self._child, "line": line})
        else:
            self._dropped += 1

    def _report_dropped(self) -> None:
        if self._dropped:
            log.info(
                "child stderr lines not logged",
                extra={
                    "child": self._child,
                    "lines": self._dropped,
                    "limit_per_second": _STDERR_LOG_LINES_PER_SECOND,
                },
            )
            self._dropped = 0

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF can arrive."""
        self.writer.close()

    async def drained_tail(self) -> str:
        """The last lines, after waiting briefly for a dead child's final output to be read."""
        await anyio.to_thread.run_sync(self._thread.join, _STDERR_JOIN_SECONDS)
        return " | ".join(self.tail)


def _process_group(pipe_id: tuple[int, int]) -> int | None:
    """The process group of our child whose stderr is the pipe `pipe_id`; None off Linux."""
    # The SDK starts each stdio child in a new session (its pid is the group id) but does not
    # expose the process; its stderr is a pipe that only that child's tree holds.
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            fields = _proc_stat(entry)
            if int(fields[1]) != me:
                continue
            fd2 = os.stat(f"/proc/{entry}/fd/2")
        except (OSError, ValueError, IndexError):
            continue
        if (fd2.st_dev, fd2.st_ino) == pipe_id:
            return int(fields[2])
    return None


def _proc_stat(pid: str) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the name: state, ppid, pgrp, ..."""
    with open(f"/proc/{pid}/stat", "rb") as file:
        return file.read().rpartition(b")")[2].split()  # the name may hold spaces and parens


def _group_alive(pgid: int) -> bool:
    """Whether a live process is left in group `pgid` (a zombie is dead: its parent reaps it)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        try:  # no /proc: a signal probe, which counts zombies as alive
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for entry in entries:
        if entry.isdigit():
            try:
                fields = _proc_stat(entry)
                if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                    return True
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    return False


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def _group_gone(pgid: int, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while True:  # polled: nothing signals the exit of processes that are not our children
            if not _group_alive(pgid):
                return True
            await anyio.sleep(_GROUP_POLL_SECONDS)
    return False


async def _end_group(pgid: int) -> None:
    """SIGTERM what is left of a process group, then SIGKILL it after a grace period."""
    if not _group_alive(pgid):
        return
    log.info("stopping leftover processes of a child", extra={"pgid": pgid})
    _signal_group(pgid, signal.SIGTERM)
    if await _group_gone(pgid, _GROUP_GRACE_SECONDS):
        return
    _signal_group(pgid, signal.SIGKILL)
    if not await _group_gone(pgid, _GROUP_GRACE_SECONDS):
        log.warning("leftover processes of a child survived SIGKILL", extra={"pgid": pgid})


def _unparsed_text(exc: Exception) -> str:
    text: object = None
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors(include_url=False)
        text = errors[0].get("input") if errors else None
    if not isinstance(text, str):
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _GARBAGE_CHARS else text[: _GARBAGE_CHARS - 3] + "..."


class _Connection:
    """One connection's resources and fate: its session, process group, and why it must end."""

    def __init__(self, child: str, poke: Callable[[], None]) -> None:
        self.child = child
        self.session: ClientSession | None = None
        self.pump: _StderrPump | None = None
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
            _signal_group(self.pgid, signal.SIGTERM)

    async def reap(self) -> None:
        """End what is left of the child's process group once the SDK has stopped its leader."""
        # The SDK signals the group only when the leader outlives its grace period, so a leader
        # that exits at once (an `npx`-style wrapper) can leave grandchildren running.
        if self.pgid is not None:
            with anyio.CancelScope(shield=True):
                await _end_group(self.pgid)

    async def stderr_tail(self) -> str:
        return await self.pump.drained_tail() if self.pump is not None else ""


class _Receiver(Protocol):
    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...


class _Watched:
    """The transport's read stream, watched: notices the end of the connection, drops unparsable lines."""

    def __init__(self, inner: _Receiver, connection: _Connection) -> None:
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
    """The child's command could not be started: retrying cannot help."""


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    if isinstance(exc, _SpawnFailed):
        return str(exc)
    if isinstance(exc, MCPError):
        return _CLOSED if exc.code == types.CONNECTION_CLOSED else exc.message
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
    """One configured child server; `run` supervises its connection until `stop`.

    Lifecycle: connecting -> ready; a lost connection, a failed start or a wedged child goes to
    reconnecting (attempts with backoff) or, out of attempts, to failed. A lazy child starts
    idle, starts on first use and returns to idle after `idle_seconds` without calls.
    """

    def __init__(
        self,
        name: str,
        server: ServerConfig,
        startup_timeout: float,
        restart: RestartPolicy | None = None,
        *,
        reconnect: bool = True,
        lazy: bool = False,
        idle_seconds: float | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.name = name
        self.server = server
        self.startup_timeout = startup_timeout
        self.restart = restart or RestartPolicy()
        self.finished = anyio.Event()  # set once `run` has released every connection
        self.tools: list[types.Tool] = []
        self._reconnect = reconnect
        self._idle_seconds = idle_seconds if lazy else None
        self._draw = draw
        self._state = ChildState.IDLE if lazy else ChildState.CONNECTING
        self._error: str | None = None
        self._attempt = 0
        self._tools_version = 0
        self._startup_ms: float | None = None
        self._connection: _Connection | None = None  # the ready one
        self._stopping = False
        self._tools_stale = False
        self._in_flight = 0
        self._last_used = 0.0
        self._changed = anyio.Event()  # set (and replaced) on every status change
        self._wake = anyio.Event()  # wakes the supervisor to look at its conditions again
        self._interruptible: anyio.CancelScope | None = None  # a connect or refresh `stop` cancels

    @property
    def state(self) -> ChildState:
        return self._state

    def status(self) -> ChildStatus:
        """A snapshot of this child."""
        attempt = self._attempt if self._state is ChildState.RECONNECTING else 0
        return ChildStatus(
            self.name,
            self.server.transport,
            self._state,
            self._error,
            len(self.tools),
            self._startup_ms,
            attempt,
            self._tools_version,
        )

    async def wait_changed(self) -> None:
        """Return at the next status change."""
        await self._changed.wait()

    async def wait_settled(self) -> None:
        """Wait while the child is connecting (its startup timeout bounds that)."""
        while self._state is ChildState.CONNECTING:
            await self._changed.wait()

    def start(self) -> None:
        """Start an idle lazy child; anything else is left as it is."""
        if self._state is ChildState.IDLE and not self._stopping:
            self._set(ChildState.CONNECTING)  # at once: waiters for connecting children wait for it
            self._poke()

    def stop(self) -> None:
        """Ask `run` to release the connection (abandoning a connection still in progress)."""
        self._stopping = True
        if self._interruptible is not None:
            self._interruptible.cancel()
        self._poke()
        self._notify()  # callers waiting for a start see the stop

    def _poke(self) -> None:
        self._wake.set()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _set(self, state: ChildState, error: str | None = None) -> None:
        self._state, self._error = state, error
        self._notify()

    async def _until(self, condition: Callable[[], bool], timeout: float = math.inf) -> None:
        """Wait for `condition` (re-checked whenever the supervisor is poked) or `timeout`."""
        with anyio.move_on_after(timeout):
            while True:
                self._wake = anyio.Event()
                if condition():
                    return
                await self._wake.wait()

    async def run(self) -> None:
        """Connect, serve, reconnect after failures, until stopped; failures are recorded, never raised."""
        try:
            while not self._stopping:
                if self._state is ChildState.IDLE:
                    await self._until(lambda: self._state is not ChildState.IDLE or self._stopping)
                    if self._stopping:
                        break
                await self._connect_and_serve()
                if self._stopping or self._state is ChildState.FAILED:
                    break
                if self._state is ChildState.RECONNECTING:
                    delay = backoff_delay(self.restart, self._attempt, self._draw)
                    await self._until(lambda: self._stopping, delay)
        finally:
            self._connection = None
            if self._state is ChildState.CONNECTING:
                self._fail("stopped before it connected")
            self.finished.set()

    async def _connect_and_serve(self) -> None:
        """One connection, from spawn to teardown; leaves the state saying how it ended."""
        started = time.monotonic()
        connection = _Connection(self.name, self._poke)
        listed: list[types.Tool] | None = None
        failure: Exception | None = None
        scope = self._interruptible = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout)
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    stack.push_async_callback(connection.reap)  # last out: after the SDK stopped the leader
                    connection.session = await self._open(stack, connection)
                    listed = await _list_tools(connection.session)
                    scope.deadline = math.inf  # connected: from here on the connection ends by itself
                    self._interruptible = None
                    self._ready(connection, listed, started)
                    await self._serve(connection)
        except Exception as exc:
            failure = exc
        finally:
            self._interruptible = None
            self._connection = None
        if self._stopping:
            return
        if listed is not None:
            if self._state is ChildState.READY:  # the transport itself failed under the connection
                self._down(f"connection lost: {_describe(failure) if failure else 'closed'}", retry=True)
            if self._state in (ChildState.RECONNECTING, ChildState.FAILED):
                tail = await connection.stderr_tail()
                if tail and self._error is not None:
                    self._set(self._state, f"{self._error}; stderr: {tail}")
            return
        self._startup_ms = round((time.monotonic() - started) * 1000, 1)
        if failure is None:
            reason = f"did not connect within {self.startup_timeout:g} s (startup_timeout_seconds)"
        elif not isinstance(self.server, StdioServer) and isinstance(_leaf(failure), httpx2.TransportError):
            reason = f"cannot reach {self.server.url}: {_describe(failure)}"
        else:
            reason = _describe(failure)
        if connection.garbage is not None:
            reason += f"; it wrote non-MCP output to stdout: {connection.garbage!r}"
        if tail := await connection.stderr_tail():
            reason += f"; stderr: {tail}"
        self._down(reason, retry=failure is None or not isinstance(_leaf(failure), _SpawnFailed))

    async def _open(self, stack: AsyncExitStack, connection: _Connection) -> ClientSession:
        server = self.server
        if isinstance(server, StdioServer):
            pump = connection.pump = _StderrPump(self.name)
            # Built, not inherited: the gateway's own tokens reach only the children they are named for.
            env = child_environment(server.env, server.env_passthrough)
            params = StdioServerParameters(command=server.command, args=server.args, env=env, cwd=server.cwd)
            try:
                read, write = await stack.enter_async_context(stdio_client(params, errlog=pump.writer))
            except (OSError, ValueError) as exc:
                detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise _SpawnFailed(f"cannot start {server.command!r}: {detail}") from exc
            finally:
                pump.close_writer()
            connection.pgid = _process_group(pump.pipe_id)
        elif isinstance(server, HttpServer):
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=server.headers,
                    timeout=_HTTP_TIMEOUT,
                    event_hooks={"response": [connection.on_http_response]},
                )
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=http)
            )
        else:
            read, write = await stack.enter_async_context(
                sse_client(server.url, headers=server.headers or None)
            )
        session = await stack.enter_async_context(
            ClientSession(
                _Watched(read, connection),
                write,
                client_info=_client_info(),
                message_handler=self._on_message,
            )
        )
        await session.initialize()
        return session

    async def _on_message(self, message: IncomingMessage) -> None:
        # Runs in the session's tasks: only flag the change, the supervisor lists the tools.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_stale = True
            self._poke()

    def _ready(self, connection: _Connection, tools: list[types.Tool], started: float) -> None:
        if tools != self.tools:
            self.tools = tools
            self._tools_version += 1
        self._connection, self._attempt, self._tools_stale = connection, 0, False
        self._startup_ms = round((time.monotonic() - started) * 1000, 1)
        self._last_used = anyio.current_time()
        self._set(ChildState.READY)
        log.info(
            "child ready", extra={"child": self.name, "tools": len(tools), "startup_ms": self._startup_ms}
        )

    async def _serve(self, connection: _Connection) -> None:
        """Hold a ready connection until it must end; the state then says why (unless stopping)."""
        while True:
            self._wake = anyio.Event()
            if self._stopping:
                return
            if connection.end_reason is not None:
                self._down(connection.end_reason, retry=True)
                if connection.kill:
                    connection.terminate()
                return
            if self._tools_stale:
                self._tools_stale = False
                await self._refresh_tools(connection)
                continue
            idle_in = self._idle_in()
            if idle_in is not None and idle_in <= 0:
                self._connection = None
                self._set(ChildState.IDLE)
                log.info(
                    "child idle, stopping it", extra={"child": self.name, "idle_seconds": self._idle_seconds}
                )
                return
            with anyio.move_on_after(math.inf if idle_in is None else idle_in):
                await self._wake.wait()

    def _idle_in(self) -> float | None:
        if self._idle_seconds is None or self._in_flight:
            return None
        return self._last_used + self._idle_seconds - anyio.current_time()

    async def _refresh_tools(self, connection: _Connection) -> None:
        assert connection.session is not None
        scope = self._interruptible = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout)
        try:
            with scope:
                tools = await _list_tools(connection.session)
                if tools != self.tools:
                    self.tools = tools
                    self._tools_version += 1
                    self._notify()
                    log.info("child tools changed", extra={"child": self.name, "tools": len(tools)})
                return
        except Exception as exc:
            if _lost_connection(exc):
                connection.end(f"connection lost: {_describe(exc)}")
                return
            log.warning("child tools refresh failed", extra={"child": self.name, "error": _describe(exc)})
        finally:
            self._interruptible = None
        if scope.cancelled_caught and not self._stopping:
            log.warning("child tools refresh timed out", extra={"child": self.name})

    def _down(self, reason: str, *, retry: bool) -> None:
        """The connection is gone: reconnect later if the policy allows, else fail for good."""
        self._connection = None
        limit = self.restart.max_attempts
        if retry and self._reconnect and (limit is None or self._attempt < limit):
            self._attempt += 1
            self._set(ChildState.RECONNECTING, reason)
            log.warning(
                "child reconnecting", extra={"child": self.name, "attempt": self._attempt, "error": reason}
            )
            return
        if self._attempt:
            reason += f" (gave up after {self._attempt} reconnect attempt{'s' if self._attempt > 1 else ''})"
        self._fail(reason)

    def _fail(self, reason: str) -> None:
        self._connection, self.tools = None, []
        self._set(ChildState.FAILED, reason)
        log.warning("child failed", extra={"child": self.name, "error": reason})

    def unavailable(self) -> ChildUnavailable:
        """The error for a call to this child while it cannot serve."""
        if self._stopping:
            return ChildUnavailable(f"child server {self.name!r} is stopped: the gateway is shutting down")
        if self._state is ChildState.RECONNECTING:
            return ChildUnavailable(
                f"child server {self.name!r} is reconnecting (attempt {self._attempt}), "
                f"last error: {self._error}"
            )
        return ChildUnavailable(f"child server {self.name!r} is unavailable ({self._state}): {self._error}")

    async def _ready_connection(self) -> _Connection:
        """The connection to call on: waits for a child that is (lazily) starting, else fails fast."""
        while True:
            changed = self._changed
            connection = self._connection
            if self._stopping:
                raise self.unavailable()
            if self._state is ChildState.READY and connection is not None:
                if connection.end_reason is None:
                    return connection
            elif self._state is ChildState.IDLE:
                self.start()
            elif self._state is not ChildState.CONNECTING:
                raise self.unavailable()
            await changed.wait()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call one of this child's tools, starting or waiting for it while it is (lazily) starting."""
        connection = await self._ready_connection()
        assert connection.session is not None
        deadline = anyio.current_effective_deadline()
        self._in_flight += 1
        try:
            result = await connection.session.call_tool(tool, arguments)
        except anyio.get_cancelled_exc_class():
            # Abandoned at its deadline: the SDK has told the child (notifications/cancelled).
            if anyio.current_time() >= deadline:
                self._timed_out(connection)
            raise
        except Exception as exc:
            if _lost_connection(exc) or connection.end_reason is not None:
                connection.end(f"connection lost: {_describe(exc)}")
                raise ChildUnavailable(f"{self.name}.{tool}: {connection.end_reason}") from exc
            connection.timeouts = 0  # it answered, even if with an error
            raise ToolCallError(f"{self.name}.{tool}: {_describe(exc)}") from exc
        finally:
            self._in_flight -= 1
            self._last_used = anyio.current_time()
            self._poke()  # the idle timer starts over
        connection.timeouts = 0
        return result

    def _timed_out(self, connection: _Connection) -> None:
        connection.timeouts += 1
        limit = self.restart.after_timeouts
        if limit is not None and connection.timeouts >= limit:
            connection.end(
                f"restarted as unresponsive: {connection.timeouts} calls in a row timed out "
                "(restart.after_timeouts)",
                kill=True,
            )
