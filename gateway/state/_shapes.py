"""Learned result shapes in the shared store, behind a local copy (`ShapeStore` in catalog/_shapes.py).

A shape store is asked on the event loop and on worker threads and must answer at once, so this one
answers from its local copy and talks to the store from one task: writes go behind, and a key it
does not hold is fetched for the next time it is asked.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import anyio

from gateway.errors import StateUnavailable
from gateway.state._shared import SharedState

__all__ = ["RedisShapeStore"]

SHAPE_TTL_SECONDS = 30 * 86_400  # a tool not called for a month is relearned
_FLUSH_SECONDS = 0.25
_MAX_LOCAL = 4096
_MAX_PENDING = 1024  # writes and fetches waiting past this are dropped: shapes are a hint


class RedisShapeStore:
    """Shapes shared by replicas: a local copy in front, the store behind."""

    def __init__(self, state: SharedState) -> None:
        self._state = state
        self._local: OrderedDict[str, str] = OrderedDict()
        self._writes: dict[str, str] = {}
        self._fetches: set[str] = set()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            shape = self._local.get(key)
            if shape is not None:
                self._local.move_to_end(key)
            elif len(self._fetches) < _MAX_PENDING:
                self._fetches.add(key)
            return shape

    def put(self, key: str, shape: str) -> None:
        with self._lock:
            self._keep(key, shape)
            if len(self._writes) < _MAX_PENDING:
                self._writes[key] = shape

    def _keep(self, key: str, shape: str) -> None:
        self._local[key] = shape
        self._local.move_to_end(key)
        while len(self._local) > _MAX_LOCAL:
            self._local.popitem(last=False)

    async def sync(self) -> None:
        """Write what was learned here and fetch what was asked for, until cancelled."""
        while True:
            await anyio.sleep(_FLUSH_SECONDS)
            with contextlib.suppress(StateUnavailable):  # kept locally; written once the store is back
                await self.flush()

    async def flush(self) -> None:
        """One round: pending writes to the store, pending fetches from it."""
        with self._lock:
            writes, self._writes = self._writes, {}
            fetches, self._fetches = list(self._fetches - set(writes)), set()
        if writes:
            try:
                await self._write(writes)
            except StateUnavailable:
                with self._lock:
                    self._writes = {**writes, **self._writes}
                raise
        if fetches:
            try:
                await self._fetch(fetches)
            except StateUnavailable:
                with self._lock:
                    self._fetches.update(fetches)
                raise

    async def _write(self, writes: dict[str, str]) -> None:
        async def run(redis: object) -> None:
            async with self._state.client.pipeline(transaction=False) as pipe:
                for key, shape in writes.items():
                    pipe.set(self._state.key("shape", key), shape, ex=SHAPE_TTL_SECONDS)  # pyright: ignore[reportUnknownMemberType]
                await pipe.execute()  # pyright: ignore[reportUnknownMemberType]

        await self._state.run("learned result shapes", run)

    async def _fetch(self, keys: list[str]) -> None:
        stored = [self._state.key("shape", key) for key in keys]
        values = await self._state.run("learned result shapes", lambda redis: redis.mget(stored))  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]
        with self._lock:
            for key, value in zip(keys, values, strict=True):  # pyright: ignore[reportUnknownArgumentType]
                if isinstance(value, bytes) and key not in self._local:
                    self._keep(key, value.decode("utf-8", "replace"))
