"""The hops between the event loop and worker threads: values, errors, context, cancellation, a closed
loop, abandoned runs and idle threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from gateway.errors import ExecutionCancelled, ToolCallError
from gateway.sandbox import _hop
from gateway.sandbox._hop import WorkerThreads, asyncio_loop, call_on_loop
from gateway.sandbox._host_call import ExecutionState
from gateway.sandbox.limits import SandboxLimits

pytestmark = pytest.mark.anyio

caller = contextvars.ContextVar[str]("caller", default="nobody")


async def test_a_coroutine_run_from_a_worker_returns_its_value_and_runs_on_the_loop_thread() -> None:
    loop = asyncio_loop()
    assert loop is not None
    loop_thread = threading.get_ident()

    async def where() -> tuple[int, str]:
        await anyio.lowlevel.checkpoint()
        return threading.get_ident(), "answered"

    with anyio.fail_after(10):
        thread, value = await anyio.to_thread.run_sync(call_on_loop, loop, where)
    assert (thread, value) == (loop_thread, "answered")


async def test_an_exception_on_the_loop_is_raised_in_the_worker_as_it_was() -> None:
    loop = asyncio_loop()
    assert loop is not None

    async def refuse() -> None:
        raise ToolCallError("the child said no")

    def on_worker() -> BaseException | None:
        try:
            call_on_loop(loop, refuse)
        except ToolCallError as exc:
            return exc
        return None

    with anyio.fail_after(10):
        error = await anyio.to_thread.run_sync(on_worker)
    assert isinstance(error, ToolCallError)
    assert (error.kind, str(error)) == ("ToolError", "the child said no")


async def test_the_coroutine_sees_the_context_variables_of_the_task_that_started_the_worker() -> None:
    loop = asyncio_loop()
    assert loop is not None
    caller.set("alice")

    async def who() -> str:
        return caller.get()

    with anyio.fail_after(10):
        assert await anyio.to_thread.run_sync(call_on_loop, loop, who) == "alice"


async def test_a_task_cancelled_on_the_loop_releases_the_worker_with_cancelled_error() -> None:
    loop = asyncio_loop()
    assert loop is not None
    started = anyio.Event()
    tasks: list[asyncio.Task[None] | None] = []

    async def hang() -> None:
        tasks.append(asyncio.current_task())
        started.set()
        await anyio.sleep_forever()

    def on_worker() -> str:
        try:
            call_on_loop(loop, hang)
        except asyncio.CancelledError:
            return "cancelled"
        return "returned"

    outcome: list[str] = []

    async def worker() -> None:
        outcome.append(await anyio.to_thread.run_sync(on_worker))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(worker)
            await started.wait()
            task = tasks[0]
            assert task is not None
            task.cancel()
    assert outcome == ["cancelled"]


def test_a_hop_to_a_closed_loop_is_refused_instead_of_waiting_forever() -> None:
    loop = asyncio.new_event_loop()
    loop.close()

    async def never() -> None:
        raise AssertionError("a closed loop runs nothing")

    with pytest.raises(anyio.RunFinishedError):
        call_on_loop(loop, never)


async def test_a_cancel_that_lands_before_the_wait_starts_on_the_loop_stops_it_before_the_call() -> None:
    # The worker checks `cancelled` before it hops; a cancel between that check and the wait's start on
    # the loop must still stop the call, not leave it running until its timeout.
    execution = ExecutionState(SandboxLimits(), 30, None)
    reached: list[bool] = []

    async def start() -> None:
        reached.append(True)

    execution.cancel()
    with anyio.fail_after(10), pytest.raises(ExecutionCancelled):
        await execution.wait(start, 5)
    assert reached == []


async def test_the_wait_deadline_is_a_timeout_and_cancel_is_a_cancellation() -> None:
    execution = ExecutionState(SandboxLimits(), 30, None)

    async def hang() -> None:
        await anyio.sleep_forever()

    with anyio.fail_after(10), pytest.raises(TimeoutError):
        await execution.wait(hang, 0.05)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:

            async def wait() -> None:
                with pytest.raises(ExecutionCancelled):
                    await execution.wait(hang, 5)

            group.start_soon(wait)
            await anyio.sleep(0.05)
            execution.cancel()


async def test_a_worker_run_returns_its_value_from_another_thread_in_the_callers_context() -> None:
    workers = WorkerThreads("test")
    caller.set("bob")

    def where() -> tuple[int, str]:
        return threading.get_ident(), caller.get()

    with anyio.fail_after(10):
        thread, seen = await workers.run(where)
    assert thread != threading.get_ident()
    assert seen == "bob"


async def test_a_worker_runs_exception_is_raised_in_the_awaiting_task() -> None:
    workers = WorkerThreads("test")

    def refuse() -> None:
        raise ToolCallError("no")

    with anyio.fail_after(10), pytest.raises(ToolCallError, match="no"):
        await workers.run(refuse)


async def test_runs_in_progress_each_get_a_thread_so_none_waits_for_another() -> None:
    workers = WorkerThreads("test")
    both_started = threading.Barrier(2, timeout=5)

    def meet() -> int:
        both_started.wait()  # broken (an error) unless both runs are on their threads at once
        return threading.get_ident()

    threads: list[int] = []

    async def run() -> None:
        threads.append(await workers.run(meet))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            group.start_soon(run)
    assert len(set(threads)) == 2


async def test_a_cancelled_run_is_abandoned_its_result_dropped_and_the_next_run_gets_another_thread() -> None:
    workers = WorkerThreads("test")
    release = threading.Event()
    finished = threading.Event()

    def blocked() -> str:
        release.wait(5)
        finished.set()
        return "dropped"

    with anyio.fail_after(10):
        with anyio.move_on_after(0.1) as scope:
            await workers.run(blocked)
        assert scope.cancelled_caught  # the task stopped waiting while its run went on
        assert await workers.run(lambda: "next") == "next"  # not queued behind the blocked run
        release.set()
        assert await anyio.to_thread.run_sync(finished.wait, 5)
        assert await workers.run(lambda: "after") == "after"  # the freed thread serves again


async def test_idle_worker_threads_exit_and_a_later_run_starts_a_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_hop, "_WORKER_IDLE_SECONDS", 0.05)
    workers = WorkerThreads("idle-test")

    with anyio.fail_after(10):
        first = await workers.run(threading.current_thread)
        await anyio.to_thread.run_sync(first.join, 5)
        assert not first.is_alive()
        assert await workers.run(threading.current_thread) is not first
