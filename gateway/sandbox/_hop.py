"""The hops between the event loop and an execution's worker thread: onto the worker for each run
(`WorkerThreads`), and back to the loop for each host wait (`call_on_loop`).

`anyio.to_thread.run_sync` starts a run generically: a limiter, a copied context, an idle-thread
check, a work item and a future on each side. A bare thread woken by one queue put and answering with
one `call_soon_threadsafe` starts a run in a fraction of that time, on every async execution
(tests/bench/thread_hop_probe.py measures both; docs/benchmarks.md has the figures).

`anyio.from_thread.run` does this job generically: a copied context, a wrapper task registered with
the worker's cancel scope, `asyncio.run_coroutine_threadsafe` chaining an asyncio future to a
`concurrent.futures.Future`, and a condition variable to wait on. A tool call pays for it on every
call; here it is one `call_soon_threadsafe`, a task, and a lock the task releases
(measured by tests/bench/host_call_levers.py). Cancellation does not depend on the worker's cancel
scope: the host's `ExecutionState.cancel` reaches the wait's own scope on the loop (see `_host_call`).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any, TypeVar

import anyio

__all__ = ["WorkerThreads", "asyncio_loop", "call_on_loop"]

T = TypeVar("T")

_LOOP_ALIVE_CHECK_SECONDS = 1.0
"""How often a waiting worker checks that the loop it waits on still runs: a loop that closed with the
hop's callback still queued would otherwise leave the worker (and its execution slot) waiting forever."""


_WORKER_IDLE_SECONDS = 10.0
"""How long a worker thread waits for its next run before it exits (as anyio's worker threads do)."""


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, for `call_on_loop`; None under another anyio backend (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def call_on_loop(loop: asyncio.AbstractEventLoop, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make()` as a task on `loop`, from another thread, and wait for its outcome.

    Its exception is raised here (a cancelled task raises `asyncio.CancelledError`). Contextvars are
    those of the calling thread, as with `anyio.from_thread.run`. Raises `anyio.RunFinishedError` when
    the loop is closed, or closes before the task could start."""
    done = threading.Lock()
    done.acquire()
    outcome: list[tuple[bool, Any]] = []

    async def run() -> None:
        # Released here rather than in a done-callback: the worker resumes one loop iteration sooner.
        try:
            outcome.append((True, await make()))
        except BaseException as exc:
            outcome.append((False, exc))
            if not isinstance(exc, Exception):
                raise  # the task was cancelled (the loop shuts down), or an interrupt: the loop sees it too
        finally:
            done.release()

    def begin() -> None:
        try:
            loop.create_task(run())
        except BaseException as exc:  # the worker must never be left waiting: it raises this
            outcome.append((False, exc))
            done.release()

    if loop.is_closed():
        raise anyio.RunFinishedError
    try:
        loop.call_soon_threadsafe(begin)
    except RuntimeError:  # closed meanwhile
        raise anyio.RunFinishedError from None
    while not done.acquire(timeout=_LOOP_ALIVE_CHECK_SECONDS):
        if loop.is_closed():
            raise anyio.RunFinishedError
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


_Job = tuple[
    contextvars.Context, Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"
]


class WorkerThreads:
    """Threads that run blocking functions for tasks on asyncio loops, a thread per run in progress.

    A run that its task stops awaiting (cancelled) is abandoned: it runs on, on its thread, and its
    result is dropped; the next run takes another thread. Idle threads exit after 10 s."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job that no run has claimed yet
        self._started = 0

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run `function(*args)` on a worker thread, in a copy of this task's context; await its outcome."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((contextvars.copy_context(), function, args, loop, future))
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
            else:
                self._started += 1
        if not claimed:
            threading.Thread(target=self._serve, name=f"{self._name}-{self._started}", daemon=True).start()
        return await future

    def _serve(self) -> None:
        while True:
            try:
                context, function, args, loop, future = self._jobs.get(timeout=_WORKER_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no run has claimed a thread since: this one can go
                        self._idle -= 1
                        return
                continue  # a run claimed this thread just now: its job is on the queue
            try:
                outcome: tuple[bool, Any] = (True, context.run(function, *args))
            except BaseException as exc:  # delivered to the awaiting task, as anyio.to_thread does
                outcome = (False, exc)
            del context, function, args  # nothing of the run outlives it on an idle thread
            with self._lock:
                self._idle += 1
            with suppress(RuntimeError):  # the loop closed: nobody awaits the outcome
                loop.call_soon_threadsafe(_settle, future, outcome)
            del loop, future, outcome


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # the task stopped awaiting (cancelled): the run was abandoned
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
