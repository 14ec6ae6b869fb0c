"""Learned result shapes on the shared store: answered from a local copy, written behind, fetched for
the next look, so one replica's shapes reach the others without a call waiting on the store."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import types

from gateway.catalog import Catalog
from gateway.catalog._shapes import MemoryShapeStore, ObservedShapes, shape_key
from gateway.errors import StateUnavailable
from gateway.state import SharedState
from gateway.state._shapes import RedisShapeStore
from tests.state.redis_server import RedisServer, patient
from tests.state.stores import WAIT

pytestmark = pytest.mark.anyio


async def test_a_shape_kept_is_read_back_at_once_in_both_kinds(redis_url: str) -> None:
    async with SharedState.connected(patient(redis_url)) as state:
        for store in (MemoryShapeStore(), RedisShapeStore(state)):
            assert store.get("k") is None
            store.put("k", '{"type":"object"}')
            assert store.get("k") == '{"type":"object"}'


async def test_a_shape_learned_on_one_replica_is_read_on_another_from_its_next_look(redis_url: str) -> None:
    config = patient(redis_url)
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as one, SharedState.connected(config) as two:
            learner, reader = RedisShapeStore(one), RedisShapeStore(two)
            learner.put("k", '{"type":"integer"}')
            await learner.flush()
            first_look = reader.get("k")  # answered at once, from what it holds: nothing yet
            await reader.flush()  # the fetch the first look asked for
            next_look = reader.get("k")
    assert first_look is None
    assert next_look == '{"type":"integer"}'


async def test_shapes_learned_while_the_store_is_down_are_written_once_it_is_back(
    redis_server: RedisServer, redis_url: str
) -> None:
    config = patient(redis_url)
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as one, SharedState.connected(config) as two:
            learner = RedisShapeStore(one)
            redis_server.stop()
            learner.put("k", '{"type":"string"}')
            with pytest.raises(StateUnavailable, match="state store"):
                await learner.flush()
            assert learner.get("k") == '{"type":"string"}'  # the local copy serves meanwhile
            redis_server.start()
            while not one.healthy:  # noqa: ASYNC110  (the reconnect loop's backoff)
                await anyio.sleep(0.05)
            await learner.flush()
            reader = RedisShapeStore(two)
            reader.get("k")
            await flushed(reader, two)
            assert reader.get("k") == '{"type":"string"}'


async def flushed(store: RedisShapeStore, state: SharedState) -> None:
    """Flush once the handle reaches the store (a handle idle through the restart finds out on use)."""
    while True:
        try:
            await store.flush()
        except StateUnavailable:
            while not state.healthy:  # noqa: ASYNC110  (the reconnect loop's backoff)
                await anyio.sleep(0.05)
        else:
            return


# What the store may hold at a shape's key that no gateway wrote: not JSON, nested past the parser's
# depth, and shapes no merge made (a union that is no list looped the merge's size count for good).
FOREIGN_SHAPES = [
    "not json",
    "[" * 100_000,
    '{"a":' * 5_000 + "1" + "}" * 5_000,
    '{"type":"array","items":{"anyOf":"x"}}',
    '{"type":"object","properties":{"a":5}}',
    '{"type":["object"],"properties":null}',
    '{"anyOf":[]}',
    "x" * 1_000_000,
]


async def test_a_shape_the_store_holds_that_no_gateway_wrote_is_ignored_and_calls_go_on(
    redis_url: str,
) -> None:
    entry = next(iter(Catalog({"s": [types.Tool(name="t", input_schema={"type": "object"})]}, []).entries))
    with anyio.fail_after(WAIT):
        async with SharedState.connected(patient(redis_url)) as state:
            for value in FOREIGN_SHAPES:
                store = RedisShapeStore(state)
                shapes = ObservedShapes(store)
                await state.client.set(state.key("shape", shape_key(entry)), value)
                assert shapes.shape_of(entry) is None  # asks the store, for the next look
                await store.flush()

                def learn_and_show(shapes: ObservedShapes = shapes) -> dict[str, Any] | None:
                    shapes.observe(entry, {"a": [1, {"b": "x"}]})
                    return shapes.shape_of(entry)

                # On a worker thread that a hang cannot hold: the deadline above fails the test instead.
                shown = await anyio.to_thread.run_sync(learn_and_show, abandon_on_cancel=True)
                assert shown is not None, value[:40]
                assert shown["type"] == "object", (value[:40], shown)
