"""One child MCP server: a supervisor task that connects it over the official SDK client, keeps it
connected (reconnecting with backoff after failures), refreshes its tools, and serves its calls.

The connection lives in one task (`Child.run`) because the SDK's transports are task-group
context managers that must be exited by the task that entered them. Errors from the SDK and
its transports are translated here, once, into a child state or a gateway error; every error text
made here (a status error, a stderr tail, a raised error) passes through `redact` before it is
stored or raised, since a child may quote a secret it was given. Opening the transport and
describing its errors live beside it (`_transport`); the stderr pump and the process-group cleanup
of a stdio child too (`_process`).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Hashable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError

from gateway.children._early_exits import EARLY_EXITS_TO_FAIL, EarlyExits, early_exit_reason
from gateway.children._transport import (
    ChildConnection,
    SpawnFailed,
    declares_resources,
    describe_error,
    is_connection_lost,
    list_all_tools,
    offers_resources,
    open_session,
    redacted_tool,
)
from gateway.children.config import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TOOL_CALL_TIMEOUT_SECONDS,
    RestartPolicy,
    ServerConfig,
    StdioServer,
)
from gateway.errors import ChildUnavailable, ToolCallError
from gateway.shared import Shares, leaf_error

__all__ = ["Child", "ChildState", "ChildStatus", "backoff_delay"]

log = logging.getLogger("gateway.children")

# A call counts against `restart.after_timeouts` only when the child had (nearly) the whole per-call
# timeout to answer; the rest allows for the gateway's own checks before the call.
_FULL_TIMEOUT_SHARE = 0.95

# How long finding out whether a child offers resources may take (search_docs mentions those that
# do): a child slow to list them is taken to offer none rather than to have failed to connect.
_RESOURCES_PROBE_SECONDS = 5.0

# What a child answers resources/read with when it has no such resource: MCP's "resource not found",
# and "invalid params", which the SDK's MCPServer sends (a read has no parameter but the URI).
_RESOURCE_NOT_FOUND_CODES = frozenset({-32002, types.INVALID_PARAMS})

T = TypeVar("T")


def _same(text: str) -> str:
    return text


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
    error: str | None = None
    tool_count: int = 0
    startup_ms: float | None = None
    attempt: int = 0  # while reconnecting: the attempt that is due or under way
    tools_version: int = 0  # bumped whenever the tool list changes, so the catalog is rebuilt
    resources: bool = False  # it lists resources or resource templates (search_docs says so)
    instructions: str | None = None  # how to use it, as it said when it connected (redacted)


def backoff_delay(policy: RestartPolicy, attempt: int, draw: Callable[[], float] = random.random) -> float:
    """Seconds before reconnect `attempt` (1-based): doubling from the initial delay up to the cap."""
    # Drawn between half and all of it, so that children lost together do not retry in lockstep.
    nominal = min(policy.max_seconds, policy.initial_seconds * 2.0 ** min(attempt - 1, 64))
    return nominal * (0.5 + 0.5 * draw())


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
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
        tool_call_timeout: float = DEFAULT_TOOL_CALL_TIMEOUT_SECONDS,
        redact: Callable[[str], str] = _same,
    ) -> None:
        self.name = name
        self.server = server
        self.startup_timeout = startup_timeout
        self.restart = restart or RestartPolicy()
        self.max_message_bytes = max_message_bytes
        self.tool_call_timeout = tool_call_timeout  # a call cut short before this is not the child's timeout
        self.call_slots = anyio.CapacityLimiter(max_concurrent_calls)  # calls in flight, from every run
        # One caller's calls never hold every slot: past its share they wait in its own queue.
        self.call_shares = Shares(max_concurrent_calls, on_wait=self._call_waits_for_share)
        self._redact = redact
        self.finished = anyio.Event()  # set once `run` has released every connection
        self.tools: list[types.Tool] = []
        self.resources = False  # as last found: it lists resources or resource templates
        self.instructions: str | None = None  # as it said when it last connected, redacted
        self._reconnect = reconnect
        self._idle_seconds = idle_seconds if lazy else None
        self._draw = draw
        self._state = ChildState.IDLE if lazy else ChildState.CONNECTING
        self._error: str | None = None
        self._attempt = 0
        self._early_exits = EarlyExits()  # a fresh Child (a reload's restart) counts them anew
        self._tools_version = 0
        self._startup_ms: float | None = None
        self._connection: ChildConnection | None = None  # the ready one
        self._stopping = False
        self._tools_stale = False
        self._resources_stale = False
        self._in_flight = 0
        self._requests = 0  # requests that hold this child, from the wait for a slot to the answer
        self._last_used = 0.0
        self._changed = anyio.Event()  # set (and replaced) on every status change
        self._wake = anyio.Event()  # wakes the supervisor to look at its conditions again
        self._interruptible: anyio.CancelScope | None = None  # a connect or refresh `stop` cancels
        self.retired = False  # left out of the pool by a config reload: stopped once its requests end

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
            self.resources,
            self.instructions,
        )

    async def wait_changed(self) -> None:
        """Return at the next status change."""
        await self._changed.wait()

    async def wait_settled(self) -> None:
        """Wait while the child is connecting (its startup timeout bounds that)."""
        while self._state is ChildState.CONNECTING:
            await self._changed.wait()

    def retune(
        self,
        *,
        startup_timeout: float,
        restart: RestartPolicy,
        max_message_bytes: int,
        max_concurrent_calls: int,
        tool_call_timeout: float,
    ) -> None:
        """Take new settings (a config reload) without reconnecting: each applies from its next use
        (`max_message_bytes` at the next connection)."""
        self.startup_timeout = startup_timeout
        self.restart = restart
        self.max_message_bytes = max_message_bytes
        self.tool_call_timeout = tool_call_timeout
        self.call_slots.total_tokens = max_concurrent_calls
        self.call_shares.resize(max_concurrent_calls)

    async def wait_no_requests(self) -> None:
        """Return once no request holds this child (one waiting for a slot or a connection counts)."""
        while self._requests:
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
        self._state, self._error = state, (self._redact(error) if error is not None else None)
        self._notify()

    def _describe(self, exc: BaseException) -> str:
        return self._redact(describe_error(exc))

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
            if self._state is ChildState.CONNECTING:  # stopped, or the gateway shutting down: no failure
                self._fail("stopped before it connected", logged=(logging.INFO, "child stopped"))
            self.finished.set()

    async def _connect_and_serve(self) -> None:
        """One connection, from spawn to teardown; leaves the state saying how it ended."""
        started = time.monotonic()
        connection = ChildConnection(self.name, self._poke)
        listed: list[types.Tool] | None = None
        failure: Exception | None = None
        scope = self._interruptible = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout)
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    stack.push_async_callback(connection.reap)  # last out: after the SDK stopped the leader
                    connection.session = await open_session(
                        stack, self.name, self.server, connection, self._on_message, self.max_message_bytes
                    )
                    tools = await self._list_tools(connection)
                    offers = await self._offers_resources(connection)
                    listed = tools
                    scope.deadline = math.inf  # connected: from here on the connection ends by itself
                    self._interruptible = None
                    self._ready(connection, listed, offers, started)
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
                self._down(f"connection lost: {describe_error(failure) if failure else 'closed'}", retry=True)
            # What the child wrote to stderr while it served can quote any caller's arguments (a crash
            # naming its input), and the error describing the child reaches every caller: the lines go
            # to the log only (docs/security.md, "How callers are kept apart").
            tail = await connection.stderr_tail()
            if tail:
                log.warning(
                    "child's last stderr lines before its connection ended",
                    extra={"child": self.name, "stderr": tail},
                )
                if self._state in (ChildState.RECONNECTING, ChildState.FAILED) and self._error is not None:
                    self._set(self._state, f"{self._error}; its last stderr lines are in the gateway's log")
            return
        self._startup_ms = round((time.monotonic() - started) * 1000, 1)
        tail = await connection.stderr_tail()
        if failure is None:
            reason = f"did not connect within {self.startup_timeout:g} s (startup_timeout_seconds)"
        elif not isinstance(self.server, StdioServer) and isinstance(
            leaf_error(failure), httpx2.TransportError
        ):
            reason = f"cannot reach {self.server.url}: {describe_error(failure)}"
        else:
            reason = describe_error(failure)
        printed: list[str] = []  # what the child said, which its next attempt is compared on
        if connection.garbage is not None:
            printed.append(f"it wrote non-MCP output to stdout: {connection.garbage!r}")
        if tail:
            printed.append(f"stderr: {tail}")
        output = "; ".join(printed)
        if output:
            reason += f"; {output}"
        # The process ended before the handshake (not a timeout, not an answer the SDK refused).
        exited = failure is not None and isinstance(self.server, StdioServer) and is_connection_lost(failure)
        if not exited:
            self._early_exits.other_failure()
        elif (alike := self._early_exits.exited(output)) >= EARLY_EXITS_TO_FAIL:
            self._fail(early_exit_reason(alike, output))
            return
        self._down(reason, retry=failure is None or not isinstance(leaf_error(failure), SpawnFailed))

    async def _on_message(self, message: IncomingMessage) -> None:
        # Runs in the session's tasks: only flag the change, the supervisor lists the tools.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_stale = True
            self._poke()
        elif isinstance(message, types.ResourceListChangedNotification):
            self._resources_stale = True
            self._poke()

    def _ready(
        self, connection: ChildConnection, tools: list[types.Tool], resources: bool, started: float
    ) -> None:
        if tools != self.tools:
            self.tools = tools
            self._tools_version += 1
        self.resources, self._resources_stale = resources, False
        instructions = connection.session.instructions if connection.session is not None else None
        # Child text that reaches the model, as its tool descriptions do: redacted the same way.
        self.instructions = self._redact(instructions) if instructions else None
        self._connection, self._attempt, self._tools_stale = connection, 0, False
        self._early_exits.connected()
        self._startup_ms = round((time.monotonic() - started) * 1000, 1)
        self._last_used = anyio.current_time()
        self._set(ChildState.READY)
        log.info(
            "child ready", extra={"child": self.name, "tools": len(tools), "startup_ms": self._startup_ms}
        )

    async def _serve(self, connection: ChildConnection) -> None:
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
            if self._resources_stale:
                self._resources_stale = False
                await self._refresh_resources(connection)
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

    async def _list_tools(self, connection: ChildConnection) -> list[types.Tool]:
        """The child's tools with every text it wrote redacted: descriptions reach the model and the
        snippet (which could transform a secret past the redaction of its output)."""
        assert connection.session is not None
        return [redacted_tool(tool, self._redact) for tool in await list_all_tools(connection.session)]

    async def _refresh_tools(self, connection: ChildConnection) -> None:
        assert connection.session is not None
        scope = self._interruptible = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout)
        try:
            with scope:
                tools = await self._list_tools(connection)
                if tools != self.tools:
                    self.tools = tools
                    self._tools_version += 1
                    self._notify()
                    log.info("child tools changed", extra={"child": self.name, "tools": len(tools)})
                return
        except Exception as exc:
            if is_connection_lost(exc):
                connection.end(f"connection lost: {describe_error(exc)}")
                return
            error = self._describe(exc)
            log.warning("child tools refresh failed", extra={"child": self.name, "error": error})
        finally:
            self._interruptible = None
        if scope.cancelled_caught and not self._stopping:
            log.warning("child tools refresh timed out", extra={"child": self.name})

    async def _offers_resources(self, connection: ChildConnection) -> bool:
        """Whether the child lists resources or templates; one that cannot say (an error, or not within
        _RESOURCES_PROBE_SECONDS) offers none as far as search_docs is concerned. Raises only for a
        lost connection."""
        assert connection.session is not None
        with anyio.move_on_after(_RESOURCES_PROBE_SECONDS):
            try:
                return await offers_resources(connection.session)
            except Exception as exc:
                if is_connection_lost(exc):
                    raise
                log.info(
                    "child resources not listed", extra={"child": self.name, "error": self._describe(exc)}
                )
                return False
        log.info("child resources not listed in time", extra={"child": self.name})
        return False

    async def _refresh_resources(self, connection: ChildConnection) -> None:
        scope = self._interruptible = anyio.CancelScope()  # `stop` need not wait for the child's answer
        try:
            with scope:
                offers = await self._offers_resources(connection)
                if offers != self.resources:
                    self.resources = offers
                    self._notify()
        except Exception as exc:  # the connection is lost
            connection.end(f"connection lost: {describe_error(exc)}")
        finally:
            self._interruptible = None

    def _down(self, reason: str, *, retry: bool) -> None:
        """The connection is gone: reconnect later if the policy allows, else fail for good."""
        self._connection = None
        limit = self.restart.max_attempts
        if retry and self._reconnect and (limit is None or self._attempt < limit):
            self._attempt += 1
            self._set(ChildState.RECONNECTING, reason)
            extra = {"child": self.name, "attempt": self._attempt, "error": self._error}
            log.warning("child reconnecting", extra=extra)
            return
        if self._attempt:
            reason += f" (gave up after {self._attempt} reconnect attempt{'s' if self._attempt > 1 else ''})"
        self._fail(reason)

    def _fail(self, reason: str, logged: tuple[int, str] = (logging.WARNING, "child failed")) -> None:
        self._connection, self.tools, self.resources, self.instructions = None, [], False, None
        self._set(ChildState.FAILED, reason)
        level, message = logged
        log.log(level, message, extra={"child": self.name, "error": self._error})

    def unavailable(self) -> ChildUnavailable:
        """The error for a call to this child while it cannot serve."""
        if self._stopping and self.retired:
            message = f"child server {self.name!r} was removed or replaced by a config reload"
        elif self._stopping:
            message = f"child server {self.name!r} is stopped: the gateway is shutting down"
        elif self._state is ChildState.RECONNECTING:
            message = (
                f"child server {self.name!r} is reconnecting (attempt {self._attempt}), "
                f"last error: {self._error}"
            )
        else:
            message = f"child server {self.name!r} is unavailable ({self._state}): {self._error}"
        return ChildUnavailable(self._redact(message))

    async def _ready_connection(self) -> ChildConnection:
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

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, holder: Hashable | None = None
    ) -> types.CallToolResult:
        """Call one of this child's tools, starting or waiting for it while it is (lazily) starting;
        `holder` is the caller whose share of the call slots it takes (None: no share, every slot)."""
        return await self._request(
            f"{self.name}.{tool}", lambda session: session.call_tool(tool, arguments), holder=holder
        )

    async def list_resources(
        self, cursor: str | None = None, *, holder: Hashable | None = None
    ) -> types.ListResourcesResult:
        """One page of this child's resources, the first or the one `cursor` names."""
        params = _page(cursor)
        return await self._request(
            f"{self.name}: resources/list",
            lambda session: session.list_resources(params=params),
            resources=True,
            holder=holder,
        )

    async def list_resource_templates(
        self, cursor: str | None = None, *, holder: Hashable | None = None
    ) -> types.ListResourceTemplatesResult:
        """One page of this child's resource templates, the first or the one `cursor` names."""
        params = _page(cursor)

        async def list_templates(session: ClientSession) -> types.ListResourceTemplatesResult:
            try:
                return await session.list_resource_templates(params=params)
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:  # resources, but no templates among them
                    return types.ListResourceTemplatesResult(resource_templates=[])
                raise

        return await self._request(
            f"{self.name}: resources/templates/list", list_templates, resources=True, holder=holder
        )

    async def read_resource(
        self, uri: str, *, holder: Hashable | None = None
    ) -> types.ReadResourceResult | None:
        """This child's resource at `uri`; None when the child answers that it has no such resource."""

        async def read(session: ClientSession) -> types.ReadResourceResult | None:
            try:
                return await session.read_resource(uri)
            except MCPError as exc:
                if exc.code in _RESOURCE_NOT_FOUND_CODES:
                    return None
                raise

        return await self._request(f"{self.name}: resources/read {uri}", read, resources=True, holder=holder)

    async def _request(
        self,
        label: str,
        send: Callable[[ClientSession], Awaitable[T]],
        *,
        resources: bool = False,
        holder: Hashable | None = None,
    ) -> T:
        """One request to this child in one of its call slots, once its caller's share of them has room
        (both waits count against the caller's timeout), starting or waiting for the child while it is
        (lazily) starting. `label` begins the text of any error; `resources` refuses a child without
        the resources capability."""
        self._requests += 1
        try:
            async with self.call_shares.held(holder, self._share_limit):
                return await self._request_in_slot(label, send, resources=resources)
        finally:
            self._requests -= 1
            if not self._requests and self.retired:
                self._notify()  # a retiring child waits for this (`wait_no_requests`)

    async def _request_in_slot(
        self, label: str, send: Callable[[ClientSession], Awaitable[T]], *, resources: bool
    ) -> T:
        slots = self.call_slots
        await _take_slot(slots)
        try:
            connection = await self._ready_connection()
            session = connection.session
            assert session is not None
            if resources and not declares_resources(session):
                raise ToolCallError(
                    self._redact(f"server {self.name!r} has no resources (it does not offer MCP resources)")
                )
            sent, deadline = anyio.current_time(), anyio.current_effective_deadline()
            self._in_flight += 1
            try:
                answer = await send(session)
            except anyio.get_cancelled_exc_class():
                # Abandoned (the SDK has told the child: notifications/cancelled). Only a call that had
                # the whole per-call timeout is the child's timeout; one cut short by the run's budget,
                # or cancelled with its run, says nothing about the child.
                if anyio.current_time() >= deadline and deadline - sent >= self._full_timeout:
                    self._timed_out(connection)
                raise
            except Exception as exc:
                if is_connection_lost(exc) or connection.end_reason is not None:
                    connection.end(f"connection lost: {describe_error(exc)}")
                    raise ChildUnavailable(self._redact(f"{label}: {connection.end_reason}")) from exc
                connection.timeouts = 0  # it answered, even if with an error
                raise ToolCallError(self._redact(f"{label}: {describe_error(exc)}")) from exc
            finally:
                self._in_flight -= 1
                self._last_used = anyio.current_time()
                if self._idle_seconds is not None:  # only a lazy child's idle timer starts over
                    self._poke()
            connection.timeouts = 0
            return answer
        finally:
            slots.release()

    def _call_waits_for_share(self) -> None:
        log.info(
            "a call waits for its caller's share of a child's call slots (all but one of them)",
            extra={"child": self.name, "max_concurrent_calls": int(self.call_slots.total_tokens)},
        )

    def _share_limit(self) -> str:
        """What held a call that timed out waiting for its caller's share, for its timeout message."""
        slots = int(self.call_slots.total_tokens)
        return (
            f"waiting for its caller's share of {self.name}'s call slots (max_concurrent_calls = {slots}: "
            f"one caller holds at most {self.call_shares.share} at once)"
        )

    @property
    def _full_timeout(self) -> float:
        return self.tool_call_timeout * _FULL_TIMEOUT_SHARE

    def _timed_out(self, connection: ChildConnection) -> None:
        connection.timeouts += 1
        limit = self.restart.after_timeouts
        if limit is not None and connection.timeouts >= limit:
            connection.end(
                f"restarted as unresponsive: {connection.timeouts} calls in a row timed out "
                "(restart.after_timeouts)",
                kill=True,
            )


def _page(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


async def _take_slot(slots: anyio.CapacityLimiter) -> None:
    """A call slot of `slots`: a free one is the common case, taken without a checkpoint (a loop turn)."""
    try:
        slots.acquire_nowait()
    except anyio.WouldBlock:
        await slots.acquire()
