"""The hop from an execution's worker thread to the event loop and back, for each host wait.

`anyio.from_thread.run` does this job generically: a copied context, a wrapper task registered with
the worker's cancel scope, `asyncio.run_coroutine_threadsafe` chaining an asyncio future to a
`concurrent.futures.Future`, and a condition variable to wait on. A tool call pays for it on every
call; here it is one `call_soon_threadsafe`, a task, and a lock the task releases
(measured by tests/bench/host_call_levers.py). Cancellation does not depend on the worker's cancel
scope: the host's `Execution.cancel` reaches the wait's own scope on the loop (see `_host_call`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio

__all__ = ["asyncio_loop", "call_on_loop"]

T = TypeVar("T")

_LOOP_ALIVE_CHECK_SECONDS = 1.0
"""How often a waiting worker checks that the loop it waits on still runs: a loop that closed with the
hop's callback still queued would otherwise leave the worker (and its execution slot) waiting forever."""


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
