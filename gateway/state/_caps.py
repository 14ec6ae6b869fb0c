"""Per-caller caps on executions in flight: counted in this process, or across replicas with leases.

A replica holds a lease for each execution it runs and renews it while the execution lasts; the
lease of a replica that died lapses after `state.lease_seconds`, and its places free themselves.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio

from gateway.errors import StateUnavailable
from gateway.state._shared import SharedState

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["CallerCaps", "LocalCallerCaps", "RedisCallerCaps"]


class CallerCaps(Protocol):
    """How many executions each caller has in flight, under a cap."""

    async def enter(self, caller: str, cap: int) -> str | None:
        """A place for one more of `caller`'s executions (its lease), or None if `cap` are in flight."""
        ...

    def leave(self, caller: str, lease: str) -> None:
        """Free the place taken as `lease`."""
        ...


class LocalCallerCaps:
    """Counts in this process's memory."""

    def __init__(self) -> None:
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    async def enter(self, caller: str, cap: int) -> str | None:
        with self._lock:
            if self._held[caller] >= cap:
                return None
            self._held[caller] += 1
            return uuid.uuid4().hex

    def leave(self, caller: str, lease: str) -> None:
        with self._lock:
            self._held[caller] -= 1
            if self._held[caller] <= 0:
                del self._held[caller]


# Drop the lapsed leases, count the rest, take one if under the cap; the store's clock stamps it.
_ENTER = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# Push the leases this replica still holds forward; a lease already lapsed stays gone.
_RENEW = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""


class RedisCallerCaps:
    """Leases in the shared store, a sorted set per caller; `renew` keeps this replica's alive."""

    def __init__(self, state: SharedState) -> None:
        self._state = state
        self._enter = state.client.register_script(_ENTER)
        self._renew = state.client.register_script(_RENEW)
        self._held: dict[str, set[str]] = {}  # caller -> leases this replica holds
        self._left: list[tuple[str, str]] = []  # freed here, still to be removed from the store
        self._wake = anyio.Event()

    @property
    def _lease_ms(self) -> int:
        return round(self._state.config.lease_seconds * 1000)

    async def enter(self, caller: str, cap: int) -> str | None:
        lease = uuid.uuid4().hex
        key = self._state.key("caller", caller)

        async def run(redis: Redis) -> Any:
            return await self._enter(keys=[key], args=[cap, self._lease_ms, lease], client=redis)  # pyright: ignore[reportUnknownVariableType]

        if int(await self._state.run("the caller's executions in flight", run)) != 1:
            return None
        self._held.setdefault(caller, set()).add(lease)
        return lease

    def leave(self, caller: str, lease: str) -> None:
        held = self._held.get(caller)
        if held is not None and lease in held:
            held.discard(lease)
            if not held:
                del self._held[caller]
            self._left.append((caller, lease))
            self._wake.set()

    async def renew(self) -> None:
        """Until cancelled: free what was left at once, and renew held leases every third of a lease."""
        while True:
            with anyio.move_on_after(self._state.config.lease_seconds / 3):
                await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self._free_left()
                await self._renew_held()
            except StateUnavailable:
                pass  # what was left lapses with its lease; held leases are renewed next time

    async def _free_left(self) -> None:
        left, self._left = self._left, []
        for caller, lease in left:
            zrem = partial(self._zrem, caller, lease)
            await self._state.run("the caller's executions in flight", zrem)

    async def _renew_held(self) -> None:
        for caller, leases in list(self._held.items()):
            await self._state.run(
                "the caller's executions in flight", partial(self._push, caller, sorted(leases))
            )

    async def _zrem(self, caller: str, lease: str, redis: Redis) -> None:
        await cast("Awaitable[Any]", redis.zrem(self._state.key("caller", caller), lease))  # pyright: ignore[reportUnknownMemberType]

    async def _push(self, caller: str, leases: list[str], redis: Redis) -> None:
        key = self._state.key("caller", caller)
        await self._renew(keys=[key], args=[self._lease_ms, *leases], client=redis)  # pyright: ignore[reportUnknownMemberType]
