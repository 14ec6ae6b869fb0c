"""Spent approval states: each paused run's state resumes once, in this process or across replicas."""

from __future__ import annotations

import threading
import time
from typing import Protocol

from gateway.state._shared import SharedState

__all__ = ["LocalSpentApprovals", "RedisSpentApprovals", "SpentApprovals"]


class SpentApprovals(Protocol):
    """The nonces of approval states already resumed, each kept as long as its state could live."""

    async def spend(self, nonce: str, ttl_seconds: float) -> bool:
        """Mark `nonce` spent for `ttl_seconds`: True the first time, False if it was spent before."""
        ...


class LocalSpentApprovals:
    """Spent nonces in this process's memory."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}  # nonce -> when it may be forgotten
        self._lock = threading.Lock()

    async def spend(self, nonce: str, ttl_seconds: float) -> bool:
        now = time.monotonic()
        with self._lock:
            while self._spent:  # in order of expiry, near enough: a state expires when its nonce may
                oldest = next(iter(self._spent))
                if self._spent[oldest] > now:
                    break
                del self._spent[oldest]
            if nonce in self._spent:
                return False
            self._spent[nonce] = now + ttl_seconds
            return True


class RedisSpentApprovals:
    """Spent nonces in the shared store: one `SET NX` each, expiring with the state."""

    def __init__(self, state: SharedState) -> None:
        self._state = state

    async def spend(self, nonce: str, ttl_seconds: float) -> bool:
        key = self._state.key("spent", nonce)
        milliseconds = max(1, round(ttl_seconds * 1000))
        first = await self._state.run(
            "whether this approval was already used",
            lambda redis: redis.set(key, b"1", nx=True, px=milliseconds),  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]
        )
        return bool(first)
