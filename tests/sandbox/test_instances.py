"""The prewarmed instance pool: `take` never waits, every item is used once, used ones are freed on the
pool's thread, `close` drops the rest."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import weakref
from typing import Any

import pytest

from gateway.sandbox import _instances
from gateway.sandbox._instances import InstancePool

WAIT = 5.0  # bounds a hang; every wait below ends as soon as its condition holds


class Maker:
    """Makes numbered items, recording which thread made each; `hold` blocks the filler's calls."""

    def __init__(self, failures: int = 0) -> None:
        self.made: list[tuple[int, str]] = []
        self.failures = failures
        self.hold = threading.Event()
        self.hold.set()
        self.filler_waiting = threading.Event()
        self.changed = threading.Condition()
        self.takers = {threading.get_ident()}  # threads that call take(); any other is the filler

    def __call__(self) -> int:
        inline = threading.get_ident() in self.takers
        if not inline:
            self.filler_waiting.set()
            assert self.hold.wait(WAIT)
        with self.changed:
            if self.failures:
                self.failures -= 1
                self.changed.notify_all()
                raise RuntimeError("instantiation failed")
            number = len(self.made) + 1
            self.made.append((number, "inline" if inline else "filler"))
            self.changed.notify_all()
            return number

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.made) >= count, WAIT), self.made


def take_within(pool: InstancePool[Any], maker: Maker) -> Any:
    """`pool.take()` on a thread of its own, failing rather than hanging if it waits."""
    taken: list[Any] = []

    def take() -> None:
        maker.takers.add(threading.get_ident())
        taken.append(pool.take())

    taker = threading.Thread(target=take, daemon=True)
    taker.start()
    taker.join(WAIT)
    assert taken, "take() waited for the filler"
    return taken[0]


def test_take_makes_an_item_inline_while_the_filler_is_still_busy() -> None:
    maker = Maker()
    maker.hold.clear()
    pool = InstancePool(maker, 2)
    try:
        assert maker.filler_waiting.wait(WAIT)
        assert take_within(pool, maker) == 1
        assert maker.made == [(1, "inline")]
    finally:
        maker.hold.set()
        pool.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority is a Linux notion")
def test_the_pool_thread_runs_below_the_threads_that_answer_requests() -> None:
    niceness: list[int] = []
    made = threading.Event()

    def make() -> int:
        niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        made.set()
        return len(niceness)

    pool = InstancePool(make, 1)
    try:
        assert made.wait(WAIT)
    finally:
        pool.close()
    assert niceness[:1] == [os.getpriority(os.PRIO_PROCESS, 0) + _instances.PREWARM_NICE]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == os.getpriority(os.PRIO_PROCESS, 0)


def test_prewarmed_items_are_taken_first_and_no_item_is_handed_out_twice() -> None:
    maker = Maker()
    pool = InstancePool(maker, 2)
    try:
        maker.wait_for(2)  # both queued: the filler makes no more until there is room
        taken = [pool.take() for _ in range(10)]
    finally:
        pool.close()
    assert taken[:2] == [1, 2]
    assert len(set(taken)) == len(taken)
    assert set(taken) <= {number for number, _ in maker.made}


def test_a_failing_maker_does_not_stop_the_filler(
    monkeypatch: pytest.MonkeyPatch, sandbox_log: list[logging.LogRecord]
) -> None:
    monkeypatch.setattr(_instances, "_RETRY_SECONDS", 0.01)
    maker = Maker(failures=2)
    pool = InstancePool(maker, 1)
    try:
        maker.wait_for(1)  # queued after two failed attempts
        assert pool.take() == 1
    finally:
        pool.close()
    assert maker.made[0] == (1, "filler")
    failures = [r for r in sandbox_log if r.getMessage().startswith("prewarming an instance failed")]
    assert len(failures) == 2
    assert all(r.exc_info is not None for r in failures)


def test_close_stops_the_filler_and_drops_the_unused_items() -> None:
    maker = Maker()
    pool = InstancePool(maker, 2)
    maker.wait_for(2)
    pool.close()
    assert pool._filler is not None
    assert not pool._filler.is_alive()
    made_before = len(maker.made)
    item = pool.take()  # none of the prewarmed ones is left: made now, on this thread
    assert item == made_before + 1
    assert maker.made[-1] == (item, "inline")


def test_close_wakes_a_filler_waiting_for_room() -> None:
    maker = Maker()
    pool = InstancePool(maker, 1)
    maker.wait_for(1)  # the pool is full: the filler waits for `replenish`, with no timeout
    pool.close()  # joins for at most 2 s
    assert pool._filler is not None
    assert not pool._filler.is_alive()


class _Used:
    """A used instance (any object that takes a weak reference)."""


class Freeing:
    """Makes used instances that record, when freed, the thread that freed them."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.done = threading.Event()

    def used(self) -> _Used:
        item = _Used()
        weakref.finalize(item, self._freed)
        return item

    def _freed(self) -> None:
        self.threads.append(threading.current_thread().name)
        self.done.set()


def pool_stuck_in_its_first_make() -> tuple[Maker, InstancePool[object]]:
    """A pool of one whose filler waits inside its first make until `maker.hold` is set."""
    maker = Maker()
    maker.hold.clear()
    pool: InstancePool[object] = InstancePool(maker, 1)
    assert maker.filler_waiting.wait(WAIT)
    return maker, pool


def test_a_retired_item_is_freed_on_the_pools_thread_not_the_callers() -> None:
    maker = Maker()
    pool: InstancePool[object] = InstancePool(maker, 1)
    freeing = Freeing()
    try:
        maker.wait_for(1)
        pool.retire(freeing.used())
        pool.replenish()
        assert freeing.done.wait(WAIT)
    finally:
        pool.close()
    assert freeing.threads == ["codemode-prewarm"]


def test_the_pools_thread_neither_frees_nor_makes_until_it_is_told_to_replenish() -> None:
    # While an execution runs, and while its result goes back, the thread must leave them the CPU.
    maker = Maker()
    pool: InstancePool[object] = InstancePool(maker, 1)
    freeing = Freeing()
    try:
        maker.wait_for(1)
        assert pool.take() == 1
        pool.retire(freeing.used())
        assert not freeing.done.wait(0.2)  # time enough for a thread woken by take or retire
        assert len(maker.made) == 1
        pool.replenish()
        assert freeing.done.wait(WAIT)
        maker.wait_for(2)
    finally:
        pool.close()
    assert freeing.threads == ["codemode-prewarm"]
    assert maker.made == [(1, "filler"), (2, "filler")]


def test_retired_items_are_freed_before_the_next_one_is_made() -> None:
    maker, pool = pool_stuck_in_its_first_make()
    freeing = Freeing()
    try:
        pool.retire(freeing.used())
        maker.hold.set()
        maker.wait_for(1)
        assert take_within(pool, maker) == 1  # room again
        pool.replenish()  # the filler frees, then makes the next
        maker.wait_for(2)
        assert freeing.threads == ["codemode-prewarm"]
    finally:
        maker.hold.set()
        pool.close()


def test_free_retired_frees_them_on_the_calling_thread_at_once() -> None:
    maker, pool = pool_stuck_in_its_first_make()  # the filler frees nothing meanwhile
    freeing = Freeing()
    try:
        pool.retire(freeing.used())
        assert freeing.threads == []
        pool.free_retired()
        assert freeing.threads == [threading.current_thread().name]
    finally:
        maker.hold.set()
        pool.close()


def test_close_frees_the_retired_items_too() -> None:
    maker, pool = pool_stuck_in_its_first_make()
    freeing = Freeing()
    pool.retire(freeing.used())
    maker.hold.set()
    pool.close()
    assert freeing.done.is_set()


def test_a_pool_of_size_zero_has_no_filler_and_makes_every_item_inline() -> None:
    maker = Maker()
    pool: InstancePool[object] = InstancePool(maker, 0)
    assert [pool.take(), pool.take()] == [1, 2]
    assert maker.made == [(1, "inline"), (2, "inline")]
    freeing = Freeing()
    pool.retire(freeing.used())  # nothing keeps it: freed here and now
    assert freeing.threads == [threading.current_thread().name]
    pool.close()
    assert pool._filler is None


class Engine:
    """Makes weakly referenced items and, like an engine's pooling allocator, refuses to make one
    while `capacity` are alive; records each refusal and which thread freed what."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.alive = 0
        self.refused: list[str] = []
        self.freed_by: list[str] = []
        self.made = 0
        self.lock = threading.Lock()

    def __call__(self) -> _Used:
        with self.lock:
            if self.alive >= self.capacity:
                self.refused.append(threading.current_thread().name)
                raise RuntimeError("maximum concurrent limit reached")
            self.alive += 1
            self.made += 1
        item = _Used()
        weakref.finalize(item, self._freed)
        return item

    def _freed(self) -> None:
        with self.lock:
            self.alive -= 1
            self.freed_by.append(threading.current_thread().name)

    def wait_for_made(self, count: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.made < count:
            assert time.monotonic() < deadline, self.made
            time.sleep(0.005)


def test_take_frees_the_retired_items_itself_before_making_one_into_a_full_engine() -> None:
    engine = Engine(capacity=3)
    pool: InstancePool[_Used] = InstancePool(engine, 1, capacity=3)
    try:
        engine.wait_for_made(1)
        for _ in range(3):  # the prewarmed one, then two made here; the thread is never told to
            pool.retire(pool.take())  # replenish, so it frees nothing
        assert engine.alive == 3  # all three retired: the engine is full
        assert engine.freed_by == []
        assert pool.take() is not None  # made here, once this thread has freed the three
    finally:
        pool.close()
    assert engine.refused == []
    assert engine.freed_by[:3] == [threading.current_thread().name] * 3


def test_the_filler_makes_nothing_while_the_engine_is_full_and_fills_again_once_there_is_room(
    sandbox_log: list[logging.LogRecord],
) -> None:
    engine = Engine(capacity=2)
    pool: InstancePool[_Used] = InstancePool(engine, 2, capacity=2)
    try:
        engine.wait_for_made(2)
        in_use = [pool.take(), pool.take()]  # nothing ready, and no room for more
        pool.replenish()
        time.sleep(0.2)  # time enough for a filler that would try anyway
        assert engine.made == 2
        while in_use:
            pool.retire(in_use.pop())
        pool.replenish()
        engine.wait_for_made(4)
    finally:
        pool.close()
    assert engine.refused == []
    assert engine.freed_by[:2] == ["codemode-prewarm"] * 2  # then close drops the two made after
    assert [r.getMessage() for r in sandbox_log] == []


def test_take_waits_for_the_instance_the_thread_is_making_when_that_fills_the_engine() -> None:
    engine = Engine(capacity=1)
    making, release = threading.Event(), threading.Event()
    real = engine.__call__

    def slow_make() -> _Used:  # the pool's thread instantiating: the engine's room is already taken
        making.set()
        assert release.wait(WAIT)
        return real()

    pool: InstancePool[_Used] = InstancePool(slow_make, 1, capacity=1)
    taken: list[_Used] = []
    try:
        assert making.wait(WAIT)
        taker = threading.Thread(target=lambda: taken.append(pool.take()))
        taker.start()
        release.set()
        taker.join(WAIT)
        assert len(taken) == 1
    finally:
        pool.close()
    assert engine.refused == []  # the prewarmed one was handed over, none made into a full engine
    assert engine.made == 1


def test_take_waits_for_a_free_already_under_way_when_the_engine_is_full() -> None:
    engine = Engine(capacity=1)
    pool: InstancePool[_Used] = InstancePool(engine, 1, capacity=1)
    freeing, release = threading.Event(), threading.Event()

    def slow_free() -> None:  # the pooling allocator resetting a large memory
        freeing.set()
        assert release.wait(WAIT)

    try:
        engine.wait_for_made(1)
        item = pool.take()
        weakref.finalize(item, slow_free)
        pool.retire(item)
        del item
        pool.replenish()
        assert freeing.wait(WAIT)  # the thread is inside the free: nothing retired is left to free
        taken: list[_Used] = []
        taker = threading.Thread(target=lambda: taken.append(pool.take()), daemon=True)
        taker.start()
        time.sleep(0.1)
        assert taken == []  # the engine is still full: it waits rather than fail
        release.set()
        taker.join(WAIT)
        assert len(taken) == 1
    finally:
        release.set()
        pool.close()
    assert engine.refused == []


def test_an_instance_dropped_without_being_retired_is_counted_out_once_it_is_freed() -> None:
    engine = Engine(capacity=2)
    pool: InstancePool[_Used] = InstancePool(engine, 0, capacity=2)
    for _ in range(10):
        item = pool.take()  # used, then dropped here: no retire, no pool thread
        del item
    assert engine.made == 10
    assert engine.refused == []


def test_take_does_not_wait_when_the_engine_is_full_of_instances_nobody_is_freeing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A wait for room would last an hour: the bounded join below tells "at once" from "waited".
    monkeypatch.setattr(_instances, "_ROOM_WAIT_SECONDS", 3600.0)
    engine = Engine(capacity=1)
    pool: InstancePool[_Used] = InstancePool(engine, 0, capacity=1)
    held = pool.take()  # still in use: the pool has nothing to free, and nothing is being freed
    failures: list[BaseException] = []

    def second_take() -> None:
        try:
            pool.take()  # tried at once: the slot's fallback (a collection) is for this case
        except RuntimeError as exc:
            failures.append(exc)

    taker = threading.Thread(target=second_take, name="taker", daemon=True)
    taker.start()
    taker.join(WAIT)
    assert not taker.is_alive(), "take() waited for room nobody is making"
    assert len(failures) == 1
    assert "maximum concurrent limit" in str(failures[0])
    assert engine.refused == ["taker"]
    del held
    assert pool.take() is not None  # the failed attempt gave its room back


def test_a_dormant_pool_makes_its_first_item_on_the_first_take_and_prewarms_after_it() -> None:
    maker = Maker()
    pool = InstancePool(maker, 2, dormant=True)
    try:
        assert take_within(pool, maker) == 1
        pool.replenish()
        maker.wait_for(3)  # the first take woke the pool: it made the two that wait now
    finally:
        pool.close()
    assert maker.made == [(1, "inline"), (2, "filler"), (3, "filler")]
