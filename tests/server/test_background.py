"""The store of background executions: limits per caller and in total, expiry, owners, cancellation
and shutdown (gateway/server/_background.py)."""

from __future__ import annotations

import anyio
import pytest
from mcp import types

from gateway.auth import STATIC_ISSUER, Owner
from gateway.config.server import BackgroundConfig
from gateway.errors import BackgroundRefused
from gateway.server._background import BackgroundExecution, BackgroundExecutions

pytestmark = pytest.mark.anyio

WAIT = 10.0

ALICE = Owner(STATIC_ISSUER, "alice")
BOB = Owner(STATIC_ISSUER, "bob")
CAROL = Owner(STATIC_ISSUER, "carol")
STDIO = Owner.of_stdio()
JWT_ALICE = Owner("https://idp.example.com", "alice")  # a JWT whose `sub` is a static token's name


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
        execution = await store.start(ALICE, _quick)
        with anyio.fail_after(WAIT):
            done = await store.wait(ALICE, execution.id)
        assert done.status == "completed"
        assert done.result == _result("done")
        clock.now += 59
        assert store.get(ALICE, execution.id) is execution
        assert store.expires_in(execution) == pytest.approx(1)
        clock.now += 1
        with pytest.raises(BackgroundRefused, match=r"unknown, its result expired .*background.keep_seconds"):
            store.get(ALICE, execution.id)


async def test_a_caller_past_its_own_limit_is_refused_while_another_caller_may_start() -> None:
    store = _store(max_running=3, max_running_per_caller=1)
    async with store.running():
        first = Forever()
        await store.start(ALICE, first)
        with pytest.raises(BackgroundRefused, match=r"background.max_running_per_caller"):
            await store.start(ALICE, Forever())
        await store.start(BOB, Forever())
        await store.start(STDIO, Forever())  # stdio's client is a caller of its own
        assert len(store.owned_by(ALICE)) == 1


async def test_the_total_limit_refuses_every_caller_and_frees_a_place_when_one_ends() -> None:
    store = _store(max_running=2, max_running_per_caller=2)
    async with store.running():
        work = Forever()
        running = await store.start(ALICE, work)
        await store.start(BOB, Forever())
        with pytest.raises(
            BackgroundRefused, match=r"2 background executions are running, .*\(background.max_running\)"
        ):
            await store.start(CAROL, Forever())
        store.cancel(ALICE, running.id)
        with anyio.fail_after(WAIT):
            await running.done.wait()
        await store.start(CAROL, Forever())


async def test_another_caller_is_told_the_id_is_unknown_and_cannot_cancel_it() -> None:
    store = _store()
    async with store.running():
        work = Forever()
        execution = await store.start(ALICE, work)
        for stranger in (Owner(STATIC_ISSUER, "mallory"), JWT_ALICE, STDIO):
            with pytest.raises(BackgroundRefused, match="another caller started it"):
                store.get(stranger, execution.id)
            with pytest.raises(BackgroundRefused):
                store.cancel(stranger, execution.id)
        assert store.owned_by(JWT_ALICE) == []
        assert not execution.finished
        store.cancel(ALICE, execution.id)


async def test_cancelling_stops_the_work_and_the_execution_says_it_was_cancelled() -> None:
    store = _store()
    async with store.running():
        work = Forever()
        execution = await store.start(ALICE, work)
        with anyio.fail_after(WAIT):
            await work.started.wait()
        store.cancel(ALICE, execution.id)
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
        execution = await store.start(ALICE, work)
        with anyio.fail_after(WAIT):
            await work.started.wait()
    assert work.cancelled
    assert work.why == "the background execution was ended by the gateway's shutdown"
    assert execution.status == "cancelled"
    assert execution.message == work.why
    with pytest.raises(BackgroundRefused, match="not being served"):
        await store.start(ALICE, _quick)


async def test_work_that_fails_in_the_host_leaves_a_failed_execution() -> None:
    async def broken(execution: BackgroundExecution) -> types.CallToolResult:
        raise RuntimeError("boom")

    store = _store()
    async with store.running():
        execution = await store.start(STDIO, broken)
        with anyio.fail_after(WAIT):
            await store.wait(STDIO, execution.id)
    assert execution.status == "failed"
    assert execution.error == "the gateway failed to run it: RuntimeError"


async def test_past_its_share_of_kept_results_a_caller_loses_its_own_oldest() -> None:
    clock = Clock()
    store = _store(clock, max_kept=3, max_kept_per_caller=2, max_running=5, max_running_per_caller=5)
    async with store.running():
        ids: list[str] = []
        for _ in range(3):
            execution = await store.start(ALICE, _quick)
            with anyio.fail_after(WAIT):
                await execution.done.wait()
            ids.append(execution.id)
            clock.now += 1
    with pytest.raises(BackgroundRefused):
        store.get(ALICE, ids[0])
    assert [e.id for e in store.owned_by(ALICE)] == ids[1:]


async def test_progress_shows_as_the_status_message_while_it_runs() -> None:
    store = _store()
    gate, reported = anyio.Event(), anyio.Event()

    async def reporting(execution: BackgroundExecution) -> types.CallToolResult:
        await execution.progress(2, 3.25)
        reported.set()
        await gate.wait()
        return _result("done")

    async with store.running():
        execution = await store.start(STDIO, reporting)
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
        execution = await store.start(STDIO, asking)
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


def _blob(size: int) -> types.CallToolResult:
    """A result that showed `size` bytes (as base64 text, the way a shown image is kept)."""
    image = types.ImageContent(data="A" * size, mime_type="image/png")
    return types.CallToolResult(content=[types.TextContent(text="shown"), image])


async def _finish(
    store: BackgroundExecutions, owner: Owner, result: types.CallToolResult
) -> BackgroundExecution:
    async def work(execution: BackgroundExecution) -> types.CallToolResult:
        return result

    execution = await store.start(owner, work)
    with anyio.fail_after(WAIT):
        await execution.done.wait()
    return execution


async def test_one_callers_runs_never_drop_another_callers_result_and_past_the_total_a_start_is_refused() -> (
    None
):
    clock = Clock()
    store = _store(clock, max_kept=3, max_kept_per_caller=2, max_running=5, max_running_per_caller=5)
    async with store.running():
        alices = await _finish(store, ALICE, _result("alice's"))
        for _ in range(5):  # bob's own share is two: each new run drops his own oldest
            await _finish(store, BOB, _result("bob's"))
            clock.now += 1
        assert store.get(ALICE, alices.id).result == _result("alice's")
        assert len(store.owned_by(BOB)) == 2
        with pytest.raises(BackgroundRefused, match=r"background.max_kept = 3\): retry in \d+ s"):
            await store.start(CAROL, _quick)  # the total is full: refused, and nobody's result dropped
        assert store.get(ALICE, alices.id).status == "completed"
        assert len(store.owned_by(BOB)) == 2


async def test_a_callers_results_are_kept_within_its_byte_share_dropping_only_its_own_oldest() -> None:
    share = 200 * 1024
    store = _store(
        max_kept_bytes=2 * share, max_kept_bytes_per_caller=share, max_running=5, max_running_per_caller=5
    )
    async with store.running():
        alices = await _finish(store, ALICE, _blob(share // 2))
        first = await _finish(store, BOB, _blob(share // 2))
        second = await _finish(store, BOB, _blob(share // 2))
        assert [e.id for e in store.owned_by(BOB)] == [second.id]  # his first made room for it
        assert first.id not in [e.id for e in store.owned_by(BOB)]
        assert store.get(ALICE, alices.id).result == _blob(share // 2)
        too_large = await _finish(store, BOB, _blob(share + 1))
        assert too_large.result is not None
        assert too_large.result.is_error
        [block] = too_large.result.content
        assert isinstance(block, types.TextContent)
        assert f"background.max_kept_bytes_per_caller = {share:,} bytes" in block.text
        assert too_large.size < 1024
        assert store.get(BOB, second.id).result == _blob(share // 2)


async def test_past_the_total_byte_budget_a_new_result_is_not_kept_and_nobody_elses_is_dropped() -> None:
    share = 128 * 1024
    store = _store(
        max_kept_bytes=2 * share, max_kept_bytes_per_caller=share, max_running=5, max_running_per_caller=5
    )
    async with store.running():
        alices = await _finish(store, ALICE, _blob(share - 100))
        bobs = await _finish(store, BOB, _blob(share - 100))
        carols = await _finish(store, CAROL, _blob(share // 2))
        assert carols.result is not None
        assert carols.result.is_error
        assert "background.max_kept_bytes = 262,144 bytes" in str(carols.result.content[0])
        assert store.get(ALICE, alices.id).result == _blob(share - 100)
        assert store.get(BOB, bobs.id).result == _blob(share - 100)


async def test_without_auth_the_id_reaches_a_run_but_a_listing_names_only_the_callers_own() -> None:
    store = _store(max_running=5, max_running_per_caller=5)
    session = Owner.of_session("session:0123456789abcdef")
    stateless = Owner.of_address("127.0.0.1")
    async with store.running():
        theirs = await _finish(store, stateless, _result("private"))
        assert store.owned_by(session) == []  # another caller's ids are not handed out
        assert store.get(session, theirs.id) is theirs  # the id itself is the capability
        mine = await _finish(store, session, _result("mine"))
        assert [e.id for e in store.owned_by(session)] == [mine.id]
