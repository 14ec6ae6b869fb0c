"""Rate windows: at most `calls` per `per_seconds`, in this process or across every process on one store."""

from __future__ import annotations

import anyio
import pytest

from gateway.state import SharedState
from gateway.state._rates import RedisRateWindows
from tests.state.redis_server import patient
from tests.state.stores import WAIT, stores_of

pytestmark = pytest.mark.anyio


async def test_a_window_takes_its_calls_and_refuses_the_next_saying_when_one_frees(
    store_url: str | None,
) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            slots = [await stores.rates.take("tool", 3, 60) for _ in range(4)]
    assert [slot.taken for slot in slots] == [True, True, True, False]
    assert 0 < slots[3].retry_after <= 60


async def test_windows_are_apart(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            assert (await stores.rates.take("a", 1, 60)).taken
            assert (await stores.rates.take("b", 1, 60)).taken
            assert not (await stores.rates.take("a", 1, 60)).taken


async def test_a_slot_given_back_is_free_again_and_only_that_one(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            first = await stores.rates.take("tool", 2, 60)
            await stores.rates.take("tool", 2, 60)
            assert first.stamp is not None
            await stores.rates.give_back("tool", first.stamp)
            await stores.rates.give_back("tool", first.stamp)  # twice: frees nothing more
            assert (await stores.rates.take("tool", 2, 60)).taken
            assert not (await stores.rates.take("tool", 2, 60)).taken


async def test_a_call_leaves_the_window_once_its_time_has_passed(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            assert (await stores.rates.take("tool", 1, 0.05)).taken
            while not (await stores.rates.take("tool", 1, 0.05)).taken:  # noqa: ASYNC110
                await anyio.sleep(0.02)


async def test_processes_on_one_store_never_take_more_than_the_rate_between_them(redis_url: str) -> None:
    config = patient(redis_url)
    taken: list[bool] = []
    with anyio.fail_after(WAIT):
        async with (
            SharedState.connected(config) as one,
            SharedState.connected(config) as two,
            SharedState.connected(config) as three,
        ):
            windows = [RedisRateWindows(state) for state in (one, two, three)] * 8

            async def take(rates: RedisRateWindows) -> None:
                taken.append((await rates.take("shared", 5, 60)).taken)

            async with anyio.create_task_group() as tg:
                for rates in windows:
                    tg.start_soon(take, rates)
    assert taken.count(True) == 5
    assert len(taken) == 24
