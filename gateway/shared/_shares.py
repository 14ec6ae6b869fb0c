"""Each caller's share of a pool of places (the sandbox's slots, a child's call slots): all but one.

A caller holds at most `share_of(places)` places at once; its further requests wait in a queue of its
own, before they reach the pool's, so they never stand in front of another caller's; and however
many it makes, one place is left for the others. A request with no caller (stdio's one client, a
gateway without `auth`) takes no share and may use every place. A caller's entry is kept only while
it holds or waits for a place, so the entries are bounded by the requests in flight.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

__all__ = ["ShareWaitTimedOut", "Shares", "share_of"]


class ShareWaitTimedOut(TimeoutError):
    """A request's deadline passed while it waited for its caller's share: a TimeoutError as any
    timeout is, whose text says which limit held it."""


def share_of(places: int) -> int:
    """How many of `places` one caller may hold while others may come: all but one, or the only one."""
    return max(1, places - 1)


@dataclass
class _Entry:
    limiter: anyio.CapacityLimiter
    users: int = field(default=0)  # requests of this caller holding or waiting for a place


class Shares:
    """Per-caller shares of `places` places, each a first-come queue of its own."""

    def __init__(self, places: int, on_wait: Callable[[], None] | None = None) -> None:
        """`on_wait` is told each time a request has to wait for its caller's share (to log it)."""
        self._share = share_of(places)
        self._entries: dict[Hashable, _Entry] = {}
        self._on_wait = on_wait

    @property
    def share(self) -> int:
        """How many places one caller may hold at once."""
        return self._share

    def resize(self, places: int) -> None:
        """Take a new number of places (a config reload); callers holding more keep them until they end."""
        self._share = share_of(places)
        for entry in self._entries.values():
            entry.limiter.total_tokens = self._share

    def __len__(self) -> int:
        """Callers holding or waiting for a place."""
        return len(self._entries)

    def waiting(self) -> int:
        """Requests waiting for their caller's share, from every caller."""
        return sum(entry.limiter.statistics().tasks_waiting for entry in self._entries.values())

    def held_by(self, holder: Hashable) -> int:
        """How many places `holder` holds now."""
        entry = self._entries.get(holder)
        return 0 if entry is None else entry.limiter.borrowed_tokens

    @asynccontextmanager
    async def held(
        self, holder: Hashable | None, held_by: Callable[[], str] | None = None
    ) -> AsyncGenerator[None]:
        """Hold a place of `holder`'s share for the block, once its own earlier requests leave one;
        None takes no share. If the wait outlasts the deadline around it, ShareWaitTimedOut(`held_by()`)
        is raised instead of the cancellation, so the timeout's message can say which limit held it."""
        if holder is None:
            yield
            return
        entry = self._entries.get(holder)
        if entry is None:
            entry = self._entries[holder] = _Entry(anyio.CapacityLimiter(self._share))
        entry.users += 1
        borrower = object()  # one token per request, whatever task makes it
        try:
            await self._take(entry.limiter, borrower, held_by)
            try:
                yield
            finally:
                entry.limiter.release_on_behalf_of(borrower)
        finally:
            entry.users -= 1
            if not entry.users:
                del self._entries[holder]

    async def _take(
        self, limiter: anyio.CapacityLimiter, borrower: object, held_by: Callable[[], str] | None
    ) -> None:
        try:  # a free place is the common case: taken without a checkpoint (a loop turn)
            limiter.acquire_on_behalf_of_nowait(borrower)
            return
        except anyio.WouldBlock:
            pass
        if self._on_wait is not None:
            self._on_wait()
        deadline = anyio.current_effective_deadline()  # -inf: cancelled already, by whatever
        try:
            await limiter.acquire_on_behalf_of(borrower)
        except anyio.get_cancelled_exc_class():
            if held_by is not None and math.isfinite(deadline) and anyio.current_time() >= deadline:
                # The deadline's scope gets this error instead of the cancellation it caught.
                raise ShareWaitTimedOut(held_by()) from None
            raise
