"""Background executions: `execute_code` runs that outlive the request that started them.

They live in the server's lifespan, not in a request: a client that disconnects, or whose request
timed out, collects the result later by id, until `background.keep_seconds` after it ended. Leaving
the lifespan (the gateway shutting down) ends those still running, shielded and bounded, each
recorded as ended by shutdown.

Each is owned by the caller that started it (`Owner`: issuer and principal with `auth`; without it
the session, address or stdio). A caller a token vouched for alone reaches its runs: another is told
the id is unknown, as it is told of an id that never existed or expired. Without `auth` the id is the
capability (a reconnecting client collects with it), and only listing goes by owner.

What finished executions keep is budgeted per owner and in total, by count and by bytes: an owner past its
own share loses its own oldest results, never another's; past the total, a new run is refused (count)
or its result is not kept (bytes), saying which limit.

Beyond memory, an `ExecutionStore` (`_execution_store.py`) keeps them too: a local file that a restarted
process reads back, or with `state` the Redis every replica reads (`_shared_executions.py`), where the
process running an execution holds a lease on it and hears cancels asked elsewhere. An execution this
process does not hold is looked up there (`find`), waited for by reading its record again, and cancelled
through it.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import anyio
from anyio.abc import TaskGroup
from mcp import types

from gateway.auth import Owner
from gateway.config.server import BackgroundConfig
from gateway.errors import BackgroundRefused, EndedByShutdown, ExecutionCancelled, ExecutionFailed
from gateway.server._execution_store import ExecutionRecord, ExecutionStore, Status

__all__ = [
    "SHUTDOWN_SECONDS",
    "BackgroundExecution",
    "BackgroundExecutions",
    "Status",
    "ended_by_shutdown",
    "kept_bytes",
]

log = logging.getLogger("gateway.server.background")

SHUTDOWN_SECONDS = 5.0
"""How long leaving the lifespan waits for cancelled executions to record their end."""
STORE_SECONDS = 5.0
"""How long an execution's end waits for its store to take it: the store's own timeouts come first."""
ELSEWHERE_POLL_SECONDS = 0.25
"""How often waiting for an execution another process runs reads its record again."""


def ended_by_shutdown() -> EndedByShutdown:
    """What an execution the gateway's shutdown ended reports (and the audit log records)."""
    return EndedByShutdown("the background execution was ended by the gateway's shutdown")


def _cancelled_by_request() -> ExecutionCancelled:
    return ExecutionCancelled("the background execution was cancelled (tasks/cancel or execute_code cancel)")


@dataclass(eq=False)
class BackgroundExecution:
    """One background execution: its status, its progress, and once it ended, its result."""

    id: str
    owner: Owner
    created_at: datetime
    status: Status = "working"
    message: str | None = None
    result: types.CallToolResult | None = None
    error: str | None = None  # why it failed (the host broke), for status "failed"
    updated_at: datetime | None = None
    ended_at: float | None = None  # on the store's clock
    ended_by: ExecutionFailed | None = None  # why it was cancelled: the caller, or shutdown
    size: int = 0  # what its result holds, in bytes (`kept_bytes`), once it ended
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    _answers: dict[str, _Answer] = field(default_factory=dict[str, "_Answer"])
    _asked: int = 0

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    def cancelled_as(self) -> ExecutionFailed:
        """Why this execution was cancelled, for its audit record."""
        return self.ended_by or _cancelled_by_request()

    async def ask(self, request: dict[str, Any], waiting: str) -> dict[str, Any]:
        """Put the execution in `input_required` with `request` (a wire-form input request) until
        `answer` brings its response; `waiting` is the status message meanwhile."""
        self._asked += 1
        key = f"approval-{self._asked}"  # never reused within the execution: clients dedupe on it
        answer = _Answer()
        self.input_requests[key] = request
        self._answers[key] = answer
        self.status, self.message, self.updated_at = "input_required", waiting, datetime.now(UTC)
        try:
            await answer.given.wait()
            return answer.response
        finally:
            del self.input_requests[key], self._answers[key]
            if not self.finished and not self.input_requests:
                self.status, self.message, self.updated_at = "working", "running", datetime.now(UTC)

    def answer(self, responses: dict[str, Any]) -> None:
        """Deliver responses to outstanding input requests; keys not outstanding are ignored."""
        for key, response in responses.items():
            waiting = self._answers.get(key)
            if waiting is not None and not waiting.given.is_set() and isinstance(response, dict):
                waiting.response = cast("dict[str, Any]", response)
                waiting.given.set()

    async def progress(self, calls: int, elapsed: float) -> None:
        """A running execution's progress (tool calls so far, seconds elapsed), as its status message."""
        if self.status != "working":
            return  # waiting for input says so instead
        self.message = f"running: {calls} tool call{'s' if calls != 1 else ''}, {elapsed:.1f} s"
        self.updated_at = datetime.now(UTC)


class _Answer:
    __slots__ = ("given", "response")

    def __init__(self) -> None:
        self.given = anyio.Event()
        self.response: dict[str, Any] = {}


Work = Callable[[BackgroundExecution], Awaitable[types.CallToolResult]]
"""Runs one execution to its result; cancelled through the execution's scope."""


def kept_bytes(result: types.CallToolResult | None) -> int:
    """What a kept result holds, in bytes: its text and what the execution showed (base64, as kept)."""
    if result is None:
        return 0
    return sum(_block_bytes(block) for block in result.content)


def _block_bytes(block: types.ContentBlock) -> int:
    if isinstance(block, types.TextContent):
        return len(block.text.encode("utf-8", "surrogatepass"))
    if isinstance(block, types.ImageContent | types.AudioContent):
        return len(block.data)
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.BlobResourceContents):
            return len(resource.blob)
        return len(resource.text.encode("utf-8", "surrogatepass"))
    return len(block.model_dump_json())


def _not_kept(size: int, key: str, limit: int) -> types.CallToolResult:
    text = (
        f"the background execution finished, but its result ({size:,} bytes) was not kept: it is over "
        f"what background results may hold ({key} = {limit:,} bytes). Show or print less, or run the "
        "snippet without background"
    )
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class BackgroundExecutions:
    """The background executions of one server: started, looked up by owner, cancelled, expired."""

    def __init__(self, config: BackgroundConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._executions: dict[str, BackgroundExecution] = {}
        self._group: TaskGroup | None = None
        self._store: ExecutionStore | None = None
        self._dropped: list[str] = []  # ids the store is yet to forget
        self._dropping = anyio.Event()

    @asynccontextmanager
    async def running(self, store: ExecutionStore | None = None) -> AsyncGenerator[BackgroundExecutions]:
        """Serve background executions while inside, keeping them in `store` too if given (a file
        across restarts, or the store replicas share); leaving ends those still running (shutdown)."""
        self._store = store
        if store is not None:
            await self._take_back(store)
        async with anyio.create_task_group() as group:
            self._group = group
            if store is not None:
                group.start_soon(self._follow_cancels, store)
                group.start_soon(self._forget_dropped, store)
            try:
                yield self
            finally:
                self._group = None  # nothing new starts from here on
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_SECONDS):
                    await self._end_all()
                group.cancel_scope.cancel()

    async def _end_all(self) -> None:
        running = [execution for execution in self._executions.values() if not execution.finished]
        for execution in running:
            execution.ended_by = ended_by_shutdown()
            execution.scope.cancel()
        for execution in running:
            await execution.done.wait()
        if running:
            log.info("background executions ended by shutdown", extra={"count": len(running)})

    async def _take_back(self, store: ExecutionStore) -> None:
        """Count the finished executions `store` kept (from before a restart) as this process's own."""
        try:
            records = await store.kept()
        except Exception:  # the store failing leaves the executions of this process working
            log.warning("background results from before the restart could not be read", exc_info=True)
            return
        for record in records:
            self._executions[record.id] = self._view(record)
        self._expire()
        if records:
            log.info("background results kept from before the restart", extra={"count": len(records)})

    async def _follow_cancels(self, store: ExecutionStore) -> None:
        """Cancel the executions of this process whose cancel another process was asked for."""
        while True:
            try:
                async for execution_id in store.cancels():
                    self._cancel_here(execution_id)
            except Exception:  # the store's connection broke: listen again
                log.warning("listening for background cancels failed; listening again", exc_info=True)
                await anyio.sleep(1.0)

    async def _forget_dropped(self, store: ExecutionStore) -> None:
        while True:
            await self._dropping.wait()
            self._dropping = anyio.Event()
            dropped, self._dropped = self._dropped, []
            try:
                await store.forget(dropped)
            except Exception:  # left to expire there (a file keeps it until the next start)
                log.warning("dropped background results could not be forgotten", exc_info=True)

    def _drop(self, execution_ids: Sequence[str]) -> None:
        for execution_id in execution_ids:
            del self._executions[execution_id]
        if self._store is not None and execution_ids:
            self._dropped.extend(execution_ids)
            self._dropping.set()

    def _cancel_here(self, execution_id: str) -> None:
        execution = self._executions.get(execution_id)
        if execution is not None and not execution.finished:
            execution.ended_by = _cancelled_by_request()
            execution.scope.cancel()

    def _record(self, execution: BackgroundExecution) -> ExecutionRecord:
        """`execution` as a store keeps it."""
        ended_at = None
        if execution.ended_at is not None:
            ended_at = time.time() - (self._clock() - execution.ended_at)
        return ExecutionRecord(
            id=execution.id,
            issuer=execution.owner.issuer,
            principal=execution.owner.principal,
            created_at=execution.created_at,
            updated_at=execution.updated_at,
            status=execution.status,
            message=execution.message,
            error=execution.error,
            result=execution.result,
            ended_at=ended_at,
            size=execution.size,
            input_requests=dict(execution.input_requests),
        )

    def _view(self, record: ExecutionRecord) -> BackgroundExecution:
        """An execution a store holds, as this process answers for it."""
        execution = BackgroundExecution(
            record.id,
            record.owner,
            record.created_at,
            status=record.status,
            message=record.message,
            result=record.result,
            error=record.error,
            updated_at=record.updated_at,
            size=record.size,
            input_requests=dict(record.input_requests),
        )
        if record.ended_at is not None:
            execution.ended_at = self._clock() - max(0.0, time.time() - record.ended_at)
        if record.finished:
            execution.done.set()
        return execution

    async def _stored(self, execution: BackgroundExecution, *, ended: bool) -> None:
        """Tell the store an execution began or ended; a failing store is logged and the execution goes on."""
        if self._store is None:
            return
        record = self._record(execution)
        try:
            await (self._store.ended(record) if ended else self._store.started(record))
        except Exception:
            log.warning("the execution store failed to take a background run", exc_info=True)

    async def _renew(self, execution: BackgroundExecution, every: float, scope: anyio.CancelScope) -> None:
        """Hold `execution` in the store while it runs, and cancel it if another process was asked to."""
        with scope:
            while True:
                await anyio.sleep(every)
                if self._store is None:
                    return
                try:
                    asked = await self._store.renew(self._record(execution))
                except Exception:  # the lease may lapse: the execution goes on here, and its end is written
                    log.warning("a background execution's lease could not be renewed", exc_info=True)
                    continue
                if asked:
                    self._cancel_here(execution.id)

    async def start(self, owner: Owner, work: Work) -> BackgroundExecution:
        """Start `work` in the background for `owner`; BackgroundRefused past a `background` limit."""
        self._expire()
        if self._group is None:
            raise BackgroundRefused(
                "background executions are not being served (the gateway is starting or shutting down); "
                "run the snippet without background, or retry shortly"
            )
        running = [execution for execution in self._executions.values() if not execution.finished]
        if len(running) >= self.config.max_running:
            raise BackgroundRefused(
                f"{len(running)} background executions are running, as many as the gateway runs at once "
                "(background.max_running): wait for one to finish, or run the snippet without background"
            )
        mine = sum(1 for execution in running if execution.owner == owner)
        if mine >= self.config.max_running_per_caller:
            raise BackgroundRefused(
                f"you have {mine} background execution{'s' if mine != 1 else ''} running, as many as one "
                "caller may (background.max_running_per_caller): collect or cancel one first"
            )
        self._make_room(owner)
        now = datetime.now(UTC)
        execution = BackgroundExecution(secrets.token_urlsafe(18), owner, now, updated_at=now)
        self._executions[execution.id] = execution
        group = self._group  # a shutdown beginning while the store writes still runs (and ends) it
        await self._stored(execution, ended=False)  # before the id is answered: any replica finds it
        group.start_soon(self._run, execution, work)
        return execution

    async def _run(self, execution: BackgroundExecution, work: Work) -> None:
        renewing = anyio.CancelScope()
        every = self._store.renew_seconds if self._store is not None else None
        if every is not None and self._group is not None:
            self._group.start_soon(self._renew, execution, every, renewing)
        try:
            with execution.scope:
                try:
                    result = await work(execution)
                except Exception as exc:  # the host failed, not the snippet: the task failed
                    log.exception("a background execution failed")
                    self._end(
                        execution, "failed", error=f"the gateway failed to run it: {type(exc).__name__}"
                    )
                else:
                    self._end(execution, "completed", result=result)
        finally:
            if not execution.finished:
                self._end(execution, "cancelled", message=str(execution.cancelled_as()))
            renewing.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(STORE_SECONDS):
                await self._stored(execution, ended=True)
            execution.done.set()  # after the store took it: shutdown waits for this

    def _end(
        self,
        execution: BackgroundExecution,
        status: Status,
        *,
        result: types.CallToolResult | None = None,
        error: str | None = None,
        message: str | None = None,
    ) -> None:
        if result is not None:
            result = self._fit(execution.owner, result)
        execution.size = kept_bytes(result)
        execution.status = status
        execution.result = result
        execution.error = error
        execution.message = (
            message or error or ("finished with an error" if result and result.is_error else status)
        )
        execution.updated_at = datetime.now(UTC)
        execution.ended_at = self._clock()

    def get(self, caller: Owner, execution_id: str) -> BackgroundExecution:
        """The execution `execution_id` if `caller` may reach it, else BackgroundRefused: unknown,
        expired, or another's. Without `auth` (an owner no token vouched for) the id is enough."""
        self._expire()
        execution = self._executions.get(execution_id)
        if execution is None or (execution.owner.verified and execution.owner != caller):
            raise BackgroundRefused(
                f"no background execution {execution_id!r} for you: the id is unknown, its result expired "
                f"(results are kept {self.config.keep_seconds:g} s after they end, background.keep_seconds), "
                "or another caller started it. Start the snippet again"
            )
        return execution

    async def find(self, caller: Owner, execution_id: str) -> BackgroundExecution:
        """As `get`, and an execution this process does not hold is looked up in the store: one another
        replica runs or ran, or one kept from before a restart."""
        try:
            return self.get(caller, execution_id)
        except BackgroundRefused:
            record = await self._read(execution_id)
            if record is None or (record.owner.verified and record.owner != caller):
                raise
            return self._view(record)

    async def _read(self, execution_id: str) -> ExecutionRecord | None:
        if self._store is None:
            return None
        try:
            record = await self._store.read(execution_id)
        except Exception as exc:
            log.warning("the execution store could not be read", exc_info=True)
            raise BackgroundRefused(
                f"background execution {execution_id!r} could not be looked up: {self._store.name} "
                f"failed ({type(exc).__name__}). Check that it is reachable, and retry"
            ) from exc
        ended_at = record.ended_at if record is not None else None
        if ended_at is not None and time.time() - ended_at >= self.config.keep_seconds:
            return None
        return record

    def runs_here(self, execution: BackgroundExecution) -> bool:
        """Whether `execution` is one this process runs (or ran), not a record read from the store."""
        return self._executions.get(execution.id) is execution

    async def wait_for(self, caller: Owner, execution_id: str, timeout: float | None) -> BackgroundExecution:
        """`caller`'s execution once it has ended, or as it stands after `timeout` seconds."""
        execution = await self.find(caller, execution_id)
        with anyio.move_on_after(timeout):
            if self.runs_here(execution):
                await execution.done.wait()
            while not execution.finished:  # another process's: its record says when it ends
                await anyio.sleep(ELSEWHERE_POLL_SECONDS)
                execution = await self.find(caller, execution_id)
        return execution

    async def cancel_anywhere(self, caller: Owner, execution_id: str) -> BackgroundExecution:
        """As `cancel`, and an execution another process runs is cancelled there, through the store."""
        execution = await self.find(caller, execution_id)
        if self.runs_here(execution):
            return self.cancel(caller, execution_id)
        if not execution.finished and self._store is not None:
            try:
                await self._store.ask_cancel(execution_id)
            except Exception as exc:
                log.warning("a cancel could not reach the execution store", exc_info=True)
                raise BackgroundRefused(
                    "the background execution runs on another replica, and the state store that would "
                    "carry the cancel there failed: check that the store (state.url) is up, and retry"
                ) from exc
        return execution

    def owned_by(self, owner: Owner) -> list[BackgroundExecution]:
        """`owner`'s executions, oldest first."""
        self._expire()
        return [execution for execution in self._executions.values() if execution.owner == owner]

    def cancel(self, caller: Owner, execution_id: str) -> BackgroundExecution:
        """Cancel `caller`'s execution (the sandbox stops, a tool call in flight is cancelled); a
        finished one stays as it ended."""
        execution = self.get(caller, execution_id)
        if not execution.finished:
            execution.ended_by = _cancelled_by_request()
            execution.scope.cancel()
        return execution

    async def wait(self, caller: Owner, execution_id: str) -> BackgroundExecution:
        """`caller`'s execution once it has ended."""
        execution = self.get(caller, execution_id)
        await execution.done.wait()
        return execution

    def expires_in(self, execution: BackgroundExecution) -> float | None:
        """Seconds until a finished execution is forgotten; None while it runs."""
        if execution.ended_at is None:
            return None
        return max(0.0, execution.ended_at + self.config.keep_seconds - self._clock())

    def _expire(self) -> None:
        now = self._clock()
        keep = self.config.keep_seconds
        self._drop(
            [i for i, e in self._executions.items() if e.ended_at is not None and now - e.ended_at >= keep]
        )

    def _finished_of(self, owner: Owner | None) -> list[BackgroundExecution]:
        """The finished executions of `owner` (of every owner if None), oldest first."""
        return sorted(
            (e for e in self._executions.values() if e.ended_at is not None and owner in (None, e.owner)),
            key=lambda e: e.ended_at or 0.0,
        )

    def _make_room(self, owner: Owner) -> None:
        """Room for one more of `owner`'s executions: past its share of kept ones (running ones count),
        its own oldest results go; past the total, BackgroundRefused (another's are never dropped)."""
        share = self.config.kept_per_caller()
        running = sum(1 for e in self._executions.values() if e.owner == owner and not e.finished)
        finished = self._finished_of(owner)
        dropped = finished[: max(0, len(finished) + running + 1 - share)]
        held = len(self._executions) - len(dropped)
        if held >= self.config.max_kept:
            raise self._full(held)
        self._drop([execution.id for execution in dropped])

    def _full(self, held: int) -> BackgroundRefused:
        oldest = next(iter(self._finished_of(None)), None)
        when = "when one of the running ones ends and expires"
        if oldest is not None:
            when = f"in {self.expires_in(oldest) or 0:.0f} s, when the oldest result expires"
        return BackgroundRefused(
            f"the gateway keeps {held} background executions, as many as it may for every caller "
            f"together (background.max_kept = {self.config.max_kept}): retry {when}, or run the snippet "
            "without background"
        )

    def _fit(self, owner: Owner, result: types.CallToolResult) -> types.CallToolResult:
        """`result` as kept within the byte budgets: `owner`'s own oldest results make room for it; a
        result over `owner`'s share, or past the total, is not kept (an error says which limit)."""
        config = self.config
        share = config.kept_bytes_per_caller()
        size = kept_bytes(result)
        if size > share:
            return _not_kept(size, "background.max_kept_bytes_per_caller", share)
        own = self._finished_of(owner)
        held = sum(e.size for e in own)
        dropped: list[BackgroundExecution] = []
        while own and held + size > share:
            dropped.append(own.pop(0))
            held -= dropped[-1].size
        total = sum(e.size for e in self._executions.values()) - sum(e.size for e in dropped)
        if total + size > config.max_kept_bytes:
            return _not_kept(size, "background.max_kept_bytes", config.max_kept_bytes)
        self._drop([execution.id for execution in dropped])
        return result
