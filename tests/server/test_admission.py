"""Executions admitted over HTTP: in flight and queued, per caller and in total (in process)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup

from gateway.auth import Owner
from gateway.server._admission import Admission, ExecutionCaps, RequestCounts, Ticket
from gateway.server._refusals import Refusal
from gateway.state import Stores
from tests.state.redis_server import RedisServer, patient

pytestmark = pytest.mark.anyio

WAIT = 5
A, B, C, D = (Owner("test", name) for name in "abcd")


async def admitted(admission: Admission, caller: Owner) -> Ticket:
    outcome = await admission.admit(caller)
    assert isinstance(outcome, Ticket), outcome
    return outcome


async def refused(admission: Admission, caller: Owner) -> Refusal:
    outcome = await admission.admit(caller)
    assert isinstance(outcome, Refusal), outcome
    return outcome


class Queued:
    """A call waiting in the queue, in a task: what it got, once it got it."""

    def __init__(self, admission: Admission, caller: Owner) -> None:
        self.admission = admission
        self.caller = caller
        self.outcome: Ticket | Refusal | None = None
        self.done = anyio.Event()

    async def __call__(self) -> None:
        self.outcome = await self.admission.admit(self.caller)
        self.done.set()


async def queue(admission: Admission, task_group: TaskGroup, caller: Owner) -> Queued:
    waiting = Queued(admission, caller)
    before = admission.queued
    task_group.start_soon(waiting)
    while admission.queued == before and not waiting.done.is_set():
        await anyio.lowlevel.checkpoint()
    return waiting


async def test_a_caller_past_its_in_flight_and_queue_caps_is_told_429_naming_the_key() -> None:
    admission = Admission(ExecutionCaps(in_flight=10, queued=10, in_flight_per_caller=1, queued_per_caller=1))
    with anyio.fail_after(WAIT):
        first = await admitted(admission, A)
        async with anyio.create_task_group() as tg:
            waiting = await queue(admission, tg, A)
            refusal = await refused(admission, A)
            assert refusal.status == 429
            assert refusal.key == "http.max_executions_queued_per_caller"
            assert refusal.retry_after
            assert "1 in flight and 1 queued" in refusal.message
            assert isinstance(await admission.admit(B), Ticket)  # another caller is not held up
            first.release()
            await waiting.done.wait()
            assert isinstance(waiting.outcome, Ticket)


async def test_the_gateway_past_its_total_caps_answers_503_naming_the_key() -> None:
    admission = Admission(ExecutionCaps(in_flight=2, queued=1, in_flight_per_caller=2, queued_per_caller=5))
    with anyio.fail_after(WAIT):
        await admitted(admission, A)
        await admitted(admission, B)
        async with anyio.create_task_group() as tg:
            await queue(admission, tg, C)
            refusal = await refused(admission, D)
            assert (refusal.status, refusal.key, refusal.value) == (503, "http.max_executions_queued", 1)
            assert refusal.retry_after
            tg.cancel_scope.cancel()


async def test_without_a_queue_the_in_flight_key_is_named() -> None:
    admission = Admission(ExecutionCaps(in_flight=1, queued=0, in_flight_per_caller=1, queued_per_caller=0))
    with anyio.fail_after(WAIT):
        await admitted(admission, A)
        same = await refused(admission, A)
        other = await refused(admission, B)
    assert (same.status, same.key) == (429, "http.max_executions_in_flight_per_caller")
    assert (other.status, other.key) == (503, "http.max_executions_in_flight")


async def test_freed_places_go_to_the_oldest_waiting_call_whose_caller_has_room() -> None:
    admission = Admission(ExecutionCaps(in_flight=2, queued=10, in_flight_per_caller=1, queued_per_caller=5))
    with anyio.fail_after(WAIT):
        a = await admitted(admission, A)
        b = await admitted(admission, B)
        async with anyio.create_task_group() as tg:
            a2 = await queue(admission, tg, A)
            c = await queue(admission, tg, C)
            b.release()  # a place, but a is still full: c gets it although a2 came first
            await c.done.wait()
            assert not a2.done.is_set()
            a.release()
            await a2.done.wait()
    assert admission.in_flight == 2
    assert admission.queued == 0


async def test_a_call_cancelled_while_queued_leaves_the_queue() -> None:
    admission = Admission(ExecutionCaps(in_flight=1, queued=1, in_flight_per_caller=1, queued_per_caller=1))
    with anyio.fail_after(WAIT):
        first = await admitted(admission, A)
        async with anyio.create_task_group() as tg:
            await queue(admission, tg, B)
            tg.cancel_scope.cancel()
        assert admission.queued == 0
        first.release()
        await admitted(admission, C)  # the place went to nobody who had left


async def test_a_place_is_freed_only_when_the_exchange_and_the_handler_have_both_let_go() -> None:
    admission = Admission(ExecutionCaps(in_flight=1, queued=0, in_flight_per_caller=1, queued_per_caller=0))
    with anyio.fail_after(WAIT):
        ticket = await admitted(admission, A)
        ticket.hold()  # the handler serving the call
        ticket.release()  # the HTTP exchange ended (a handshake-era client closed its stream)
        assert admission.in_flight == 1
        await refused(admission, B)
        ticket.release()
        assert admission.in_flight == 0
        ticket.release()  # once too often: no effect
        assert admission.in_flight == 0
        late = await admitted(admission, B)
        late.release()
        late.hold()  # a handler starting after its exchange ended still counts
        assert admission.in_flight == 1


async def test_shutting_down_refuses_waiting_and_new_calls_and_waits_for_those_in_flight() -> None:
    admission = Admission(ExecutionCaps(in_flight=1, queued=5, in_flight_per_caller=1, queued_per_caller=5))
    with anyio.fail_after(WAIT):
        running = await admitted(admission, A)
        async with anyio.create_task_group() as tg:
            waiting = await queue(admission, tg, A)
            admission.stop_admitting()
            await waiting.done.wait()
            assert isinstance(waiting.outcome, Refusal)
            assert waiting.outcome.status == 503
            assert "shutting down" in (await refused(admission, B)).message

            idle = anyio.Event()

            async def wait_idle() -> None:
                await admission.wait_idle()
                idle.set()

            tg.start_soon(wait_idle)
            await anyio.sleep(0.05)
            assert not idle.is_set()
            running.release()
            await idle.wait()


def test_a_caller_past_its_open_requests_is_refused_429_naming_the_limit_and_others_are_counted_apart() -> (
    None
):
    requests = RequestCounts(2)
    assert requests.enter(A) is None
    assert requests.enter(A) is None
    refusal = requests.enter(A)
    assert refusal is not None
    assert refusal.status == 429
    assert refusal.retry_after is not None
    assert "http.max_requests_in_flight_per_caller = 2" in refusal.message
    assert (refusal.key, refusal.value) == ("http.max_requests_in_flight_per_caller", 2)
    assert requests.enter(B) is None
    requests.leave(A)
    assert requests.enter(A) is None


async def test_with_shared_state_a_callers_cap_counts_its_calls_on_every_replica_together(
    redis_url: str,
) -> None:
    caps = ExecutionCaps(in_flight=8, queued=8, in_flight_per_caller=2, queued_per_caller=2)
    stores = [Stores.of(patient(redis_url)) for _ in range(2)]
    with anyio.fail_after(WAIT):
        async with stores[0].serving(), stores[1].serving():
            one, two = (Admission(caps, replica.caps) for replica in stores)
            first = await admitted(one, A)
            await admitted(two, A)
            refusal = await refused(two, A)  # the caller's two places are taken, one on each replica
            other = await admitted(two, B)  # callers apart
            first.release()
            while not isinstance(again := await one.admit(A), Ticket):  # noqa: ASYNC110  (freed behind)
                await anyio.sleep(0.01)
            again.release()
            other.release()
    assert refusal.status == 429
    assert "across the replicas" in refusal.message
    assert (refusal.key, refusal.value) == ("http.max_executions_in_flight_per_caller", 2)
    assert (one.in_flight, two.in_flight) == (0, 1)  # the refused call took no place here either


async def test_with_the_shared_store_down_each_replicas_own_cap_still_holds(
    redis_server: RedisServer, redis_url: str
) -> None:
    caps = ExecutionCaps(in_flight=8, queued=0, in_flight_per_caller=1, queued_per_caller=0)
    stores = Stores.of(patient(redis_url))
    with anyio.fail_after(WAIT):
        async with stores.serving():
            admission = Admission(caps, stores.caps)
            redis_server.stop()
            held = await admitted(admission, A)  # the store cannot say: this replica's cap decides
            refusal = await refused(admission, A)
            held.release()
    assert refusal.status == 429
