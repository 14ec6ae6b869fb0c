"""Per-caller caps: at most `cap` executions of a caller in flight, here or across every replica."""

from __future__ import annotations

import anyio
import pytest

from gateway.state import SharedState
from gateway.state._caps import RedisCallerCaps
from tests.state.redis_server import RedisServer, patient
from tests.state.stores import WAIT, stores_of

pytestmark = pytest.mark.anyio


async def test_a_caller_gets_its_cap_of_places_and_one_freed_is_free_again(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            leases = [await stores.caps.enter("alice", 2) for _ in range(3)]
            assert await stores.caps.enter("bob", 2) is not None  # callers apart
            first = leases[0]
            assert first is not None
            stores.caps.leave("alice", first)
            while await stores.caps.enter("alice", 2) is None:  # noqa: ASYNC110  (freed behind, at once)
                await anyio.sleep(0.01)
    assert [lease is not None for lease in leases] == [True, True, False]


async def test_replicas_on_one_store_share_a_callers_cap(redis_url: str) -> None:
    config = patient(redis_url)
    taken: list[bool] = []
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as one, SharedState.connected(config) as two:
            caps = [RedisCallerCaps(one), RedisCallerCaps(two)] * 5

            async def enter(replica: RedisCallerCaps) -> None:
                taken.append(await replica.enter("alice", 4) is not None)

            async with anyio.create_task_group() as tg:
                for replica in caps:
                    tg.start_soon(enter, replica)
    assert taken.count(True) == 4


async def test_a_dead_replicas_places_free_themselves_once_its_leases_lapse(
    redis_server: RedisServer, redis_url: str
) -> None:
    # Long enough that the refusal below comes before the lease lapses on a loaded machine, short
    # enough to wait out.
    config = patient(redis_url, lease_seconds=3)
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as dead, SharedState.connected(config) as alive:
            assert await RedisCallerCaps(dead).enter("alice", 1) is not None  # never renewed, never left
            survivor = RedisCallerCaps(alive)
            assert await survivor.enter("alice", 1) is None
            while await survivor.enter("alice", 1) is None:  # noqa: ASYNC110  (the lease lapses)
                await anyio.sleep(0.1)


async def test_renewing_pushes_the_leases_a_replica_holds_forward_and_not_the_ones_it_left(
    redis_url: str,
) -> None:
    config = patient(redis_url, lease_seconds=60)
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as state:
            caps = RedisCallerCaps(state)
            held, left = await caps.enter("alice", 2), await caps.enter("alice", 2)
            assert held is not None
            assert left is not None
            key = state.key("caller", "alice")
            before = await state.client.zscore(key, held)  # pyright: ignore[reportUnknownMemberType]
            caps.leave("alice", left)
            await anyio.sleep(0.01)  # the store's clock moves on
            await caps._free_left()  # pyright: ignore[reportPrivateUsage]
            await caps._renew_held()  # pyright: ignore[reportPrivateUsage]
            after = await state.client.zscore(key, held)  # pyright: ignore[reportUnknownMemberType]
            gone = await state.client.zscore(key, left)  # pyright: ignore[reportUnknownMemberType]
    assert before is not None
    assert after is not None
    assert after > before
    assert gone is None
