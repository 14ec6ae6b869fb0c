"""Rate windows: sliding-window call counts, in this process or shared by replicas.

A window is a string key (a tool's, or a tool's and a caller's); a call takes a slot in it before the
child is called, and gives it back only if the call did not happen (its run paused before it).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from gateway.state._shared import SharedState

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["LocalRateWindows", "RateSlot", "RateWindows", "RedisRateWindows"]


@dataclass(frozen=True)
class RateSlot:
    """What taking a slot gave: `stamp` to give it back by, or None and seconds until one frees."""

    stamp: str | None
    retry_after: float = 0.0

    @property
    def taken(self) -> bool:
        return self.stamp is not None


class RateWindows(Protocol):
    """Sliding windows of calls, each holding at most `calls` per `per_seconds`."""

    async def take(self, window: str, calls: int, per_seconds: float) -> RateSlot:
        """A slot in `window` now, or the time until one frees if the window is full."""
        ...

    async def give_back(self, window: str, stamp: str) -> None:
        """Free the slot taken as `stamp` (its call never happened)."""
        ...


class LocalRateWindows:
    """Windows in this process's memory, on a monotonic clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._calls: dict[str, deque[tuple[float, str]]] = {}
        self._lock = threading.Lock()

    async def take(self, window: str, calls: int, per_seconds: float) -> RateSlot:
        with self._lock:
            now = self._clock()
            stamps = self._calls.setdefault(window, deque())
            while stamps and stamps[0][0] <= now - per_seconds:
                stamps.popleft()
            if len(stamps) >= calls:
                return RateSlot(None, stamps[0][0] + per_seconds - now)
            stamp = uuid.uuid4().hex
            stamps.append((now, stamp))
            return RateSlot(stamp)

    async def give_back(self, window: str, stamp: str) -> None:
        with self._lock:
            stamps = self._calls.get(window)
            if stamps is not None:
                for item in [item for item in stamps if item[1] == stamp]:
                    stamps.remove(item)


# One round trip, atomic: drop what left the window, count, take a slot if one is free. The store's
# own clock stamps it, so replicas whose clocks differ still share one window.
_TAKE = """
local now_ms = redis.call('TIME')
now_ms = tonumber(now_ms[1]) * 1000 + math.floor(tonumber(now_ms[2]) / 1000)
local per_ms = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - per_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tostring(tonumber(oldest[2]) + per_ms - now_ms)}
end
redis.call('ZADD', KEYS[1], now_ms, ARGV[3])
redis.call('PEXPIRE', KEYS[1], per_ms)
return {1, '0'}
"""


class RedisRateWindows:
    """Windows in the shared store: a sorted set of call stamps each, taken by one Lua script."""

    def __init__(self, state: SharedState) -> None:
        self._state = state
        self._take = state.client.register_script(_TAKE)

    async def take(self, window: str, calls: int, per_seconds: float) -> RateSlot:
        key = self._state.key("rate", window)
        stamp = uuid.uuid4().hex
        milliseconds = max(1, round(per_seconds * 1000))

        async def run(redis: Redis) -> Any:
            return await self._take(keys=[key], args=[calls, milliseconds, stamp], client=redis)  # pyright: ignore[reportUnknownVariableType]

        answer = cast("list[Any]", await self._state.run("its rate limit", run))
        if int(answer[0]) == 1:
            return RateSlot(stamp)
        return RateSlot(None, max(0.0, float(answer[1]) / 1000))

    async def give_back(self, window: str, stamp: str) -> None:
        key = self._state.key("rate", window)

        async def run(redis: Redis) -> None:
            await cast("Awaitable[object]", redis.zrem(key, stamp))  # pyright: ignore[reportUnknownMemberType]

        await self._state.run("its rate limit", run)
