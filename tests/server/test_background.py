"""The store of background executions: limits per caller and in total, expiry, owners, cancellation
and shutdown (gateway/server/_background.py)."""

from __future__ import annotations

import anyio
import pytest
from mcp import types

from gateway.config import BackgroundConfig
from gateway.errors import BackgroundRefused
from gateway.server._background import BackgroundExecution, BackgroundExecutions

pytestmark = pytest.mark.anyio

WAIT = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


async def _quick(execution: BackgroundExecution) -> types.CallToolResult:
    return _result("done")


class Forever:
    """Work that runs until cancelled, remembering that it was."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False
        self.why: str | None = None

    async def __call__(self, execution: BackgroundExecution) -> types.CallToolResult:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            self.why = str(execution.cancelled_as())
            raise
        raise AssertionError("unreachable")


def _store(clock: Clock | None = None, **config: float) -> BackgroundExecutions:
    return BackgroundExecutions(BackgroundConfig.model_validate(config), clock or Clock())


async def test_a_finished_result_is_kept_for_keep_seconds_and_then_its_id_is_unknown() -> None:
    clock = Clock()
    store = _store(clock, keep_seconds=60)
    async with store.running():
        execution = store.start("alice", _quick)
        with anyio.fail_after(WAIT):
            done = await store.wait("alice", execution.id)
        assert done.status == "completed"
        assert done.result == _result("done")
        clock.now += 59
        assert store.get("alice", execution.id) is execution
        assert store.expires_in(execution) == pytest.approx(1)
        clock.now += 1
        with pytest.raises(BackgroundRefused, match=r"unknown, its result expired .*background.keep_seconds"):
            store.get("alice", execution.id)


async def test_a_caller_past_its_own_limit_is_refused_while_another_caller_may_start() -> None:
    store = _store(max_running=3, max_running_per_caller=1)
    async with store.running():
        first = Forever()
        store.start("alice", first)
        with pytest.raises(BackgroundRefused, match=r"background.max_running_per_caller"):
            store.start("alice", Forever())
        store.start("bob", Forever())
        store.start(None, Forever())  # an unidentified caller counts as one caller of its own
        assert len(store.owned_by("alice")) == 1


async def test_the_total_limit_refuses_every_caller_and_frees_a_place_when_one_ends() -> None:
    store = _store(max_running=2, max_running_per_caller=2)
    async with store.running():
        work = Forever()
        running = store.start("alice", work)
        store.start("bob", Forever())
        with pytest.raises(
            BackgroundRefused, match=r"2 background executions are running, .*\(background.max_running\)"
        ):
            store.start("carol", Forever())
        store.cancel("alice", running.id)
        with anyio.fail_after(WAIT):
            await running.done.wait()
        store.start("carol", Forever())


async def test_another_caller_is_told_the_id_is_unknown_and_cannot_cancel_it() -> None:
    store = _store()
    async with store.running():
        work = Forever()
        execution = store.start("alice", work)
        for stranger in ("mallory", None):
            with pytest.raises(BackgroundRefused, match="another caller started it"):
                store.get(stranger, execution.id)
            with pytest.raises(BackgroundRefused):
                store.cancel(stranger, execution.id)
        assert store.owned_by("mallory") == []
        assert not execution.finished
        store.cancel("alice", execution.id)


async def test_cancelling_stops_the_work_and_the_execution_says_it_was_cancelled() -> None:
    store = _store()
    async with store.running():
        work = Forever()
        execution = store.start("alice", work)
        with anyio.fail_after(WAIT):
            await work.started.wait()
        store.cancel("alice", execution.id)
        with anyio.fail_after(WAIT):
            await execution.done.wait()
    assert work.cancelled
    assert execution.status == "cancelled"
    assert work.why is not None
    assert "cancelled" in work.why
    assert execution.result is None


async def test_leaving_the_lifespan_ends_running_executions_as_ended_by_shutdown() -> None:
    store = _store()
    work = Forever()
    async with store.running():
        execution = store.start("alice", work)
        with anyio.fail_after(WAIT):
            await work.started.wait()
    assert work.cancelled
    assert work.why == "the background execution was ended by the gateway's shutdown"
    assert execution.status == "cancelled"
    assert execution.message == work.why
    with pytest.raises(BackgroundRefused, match="not being served"):
        store.start("alice", _quick)


async def test_work_that_fails_in_the_host_leaves_a_failed_execution() -> None:
    async def broken(execution: BackgroundExecution) -> types.CallToolResult:
        raise RuntimeError("boom")

    store = _store()
    async with store.running():
        execution = store.start(None, broken)
        with anyio.fail_after(WAIT):
            await store.wait(None, execution.id)
    assert execution.status == "failed"
    assert execution.error == "the gateway failed to run it: RuntimeError"


async def test_past_max_kept_the_oldest_finished_result_is_dropped() -> None:
    clock = Clock()
    store = _store(clock, max_kept=2, max_running=5, max_running_per_caller=5)
    async with store.running():
        ids: list[str] = []
        for _ in range(3):
            execution = store.start("alice", _quick)
            with anyio.fail_after(WAIT):
                await execution.done.wait()
            ids.append(execution.id)
            clock.now += 1
    with pytest.raises(BackgroundRefused):
        store.get("alice", ids[0])
    assert [e.id for e in store.owned_by("alice")] == ids[1:]


async def test_progress_shows_as_the_status_message_while_it_runs() -> None:
    store = _store()
    gate, reported = anyio.Event(), anyio.Event()

    async def reporting(execution: BackgroundExecution) -> types.CallToolResult:
        await execution.progress(2, 3.25)
        reported.set()
        await gate.wait()
        return _result("done")

    async with store.running():
        execution = store.start(None, reporting)
        with anyio.fail_after(WAIT):
            await reported.wait()
        assert execution.status == "working"
        assert execution.message == "running: 2 tool calls, 3.2 s"
        gate.set()


async def test_asking_puts_the_execution_in_input_required_until_its_key_is_answered() -> None:
    store = _store()
    responses: list[dict[str, object]] = []
    asked = anyio.Event()

    async def asking(execution: BackgroundExecution) -> types.CallToolResult:
        request = {"method": "elicitation/create", "params": {"message": "approve?"}}
        waiting = execution.ask(request, "waiting for the user")
        asked.set()
        responses.append(await waiting)
        return _result("done")

    async with store.running():
        execution = store.start(None, asking)
        with anyio.fail_after(WAIT):
            await asked.wait()
            while execution.status != "input_required":  # noqa: ASYNC110 (the coroutine runs on its own)
                await anyio.sleep(0.01)
            assert execution.input_requests == {
                "approval-1": {"method": "elicitation/create", "params": {"message": "approve?"}}
            }
            assert execution.message == "waiting for the user"
            await execution.progress(1, 1.0)  # progress does not hide the question
            assert execution.message == "waiting for the user"
            execution.answer({"approval-9": {"action": "accept"}, "approval-1": "not a response"})
            assert execution.status == "input_required"  # unknown keys and malformed answers are ignored
            execution.answer({"approval-1": {"action": "accept"}})
            await execution.done.wait()
    assert responses == [{"action": "accept"}]
    assert execution.status == "completed"
    assert execution.input_requests == {}
