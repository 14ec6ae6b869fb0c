"""The stores in both kinds, for behaviour tests that each must pass: in this process, and on Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from gateway.state import Stores
from tests.state.redis_server import patient

KINDS = ("local", "redis")
WAIT = 20  # every store operation answers in milliseconds: this bounds a hang


@asynccontextmanager
async def stores_of(url: str | None) -> AsyncIterator[Stores]:
    """`Stores()` without a URL; with one, the stores on a SharedState connected to it."""
    if url is None:
        yield Stores()
        return
    stores = Stores.of(patient(url))
    with anyio.fail_after(WAIT):
        async with stores.serving():
            assert stores.health == "ok"
            yield stores
