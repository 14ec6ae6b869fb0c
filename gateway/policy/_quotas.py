"""Call quotas: per-execution call counts and the sliding-window rate limits.

`policy.max_tool_calls` and `policy.tools[name].max_calls` count within one execution;
`policy.tools[name].rate` is shared by every execution of one gateway, in one window for every
caller or in one per caller (`per: "principal"`): per `Owner`, the principal together with the
issuer that vouched for it, so that a JWT's `sub` never shares a static token's window of that name.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping

from gateway.auth import Owner
from gateway.catalog import CatalogEntry
from gateway.errors import QuotaExceeded, StateUnavailable
from gateway.policy.config import PolicyConfig, RateLimit, ToolPolicy
from gateway.state import LocalRateWindows, RateWindows

__all__ = ["MAX_TOOL_CALLS", "Clock", "ExecutionQuota", "RateLimiter"]

Clock = Callable[[], float]

MAX_TOOL_CALLS = "max_tool_calls"
"""The key, among a policy's sources (tool names otherwise), of where its max_tool_calls was written."""


def _seconds(value: float) -> str:
    return f"{value:g}"


class RateLimiter:
    """Sliding-window call counts per tool, in the rate windows every execution shares: this
    process's, or with `state` set, the ones every replica shares."""

    def __init__(self, clock: Clock = time.monotonic, windows: RateWindows | None = None) -> None:
        self._windows: RateWindows = windows if windows is not None else LocalRateWindows(clock)

    async def acquire(self, window: str, rate: RateLimit, where: str, *, shown: str) -> str:
        """Take a slot in `window` now and return its stamp, or raise QuotaExceeded (naming the tool
        as `shown`) if the window is full, or StateUnavailable if the shared store cannot say."""
        try:
            slot = await self._windows.take(window, rate.calls, rate.per_seconds)
        except StateUnavailable as exc:
            raise StateUnavailable(f"{shown}: {exc}") from None
        if slot.stamp is None:
            whose = " for each caller" if rate.per == "principal" else ""
            raise QuotaExceeded(
                f"{shown}: rate limit of {rate.calls} calls per {_seconds(rate.per_seconds)} seconds"
                f"{whose} reached ({where}); try again in {slot.retry_after:.1f} s",
                quota=where,
                limit=rate.calls,
                retry_after=slot.retry_after,
            )
        return slot.stamp

    async def release(self, window: str, stamp: str) -> None:
        """Give back the slot taken as `stamp` (its call never happened)."""
        await self._windows.give_back(window, stamp)


class ExecutionQuota:
    """One execution's tool-call counts against the policy's quotas (and the shared rate limits)."""

    def __init__(
        self,
        config: PolicyConfig,
        limiter: RateLimiter,
        *,
        owner: Owner | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        """`owner`: whose execution, for per-caller rates; `sources`: where each tool's rules were
        written (`policy.roles[...]`), for the errors that name them."""
        self._config = config
        self._limiter = limiter
        self._owner = owner
        self._sources = sources or {}
        self._counts: Counter[str] = Counter()
        # What `release` takes back from the limiter: (tool, window, stamp).
        self._last_rate: tuple[str, str, str] | None = None
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """Calls acquired so far in this execution."""
        return self._counts.total()

    async def acquire(self, entry: CatalogEntry) -> None:
        """Count a call of `entry`, taking its rate slot, or raise QuotaExceeded and count nothing."""
        name = entry.qualified
        rules = self._config.tools.get(name)
        with self._lock:
            source = self._check(name, rules)
        if rules is not None and rules.rate is not None:
            window = self._window(name, rules.rate)
            stamp = await self._limiter.acquire(window, rules.rate, f"{source}.rate", shown=name)
            self._last_rate = (name, window, stamp)
        with self._lock:
            self._counts[name] += 1

    def acquire_name(self, name: str) -> None:
        """Count what else a snippet asks of a child (a resource read, `server:uri`), which only
        `policy.max_tool_calls` limits."""
        with self._lock:
            self._check(name, None)
            self._counts[name] += 1

    def _check(self, name: str, rules: ToolPolicy | None) -> str:
        """Raise QuotaExceeded if a per-execution quota is full; return where `name`'s rules were written."""
        total = self._config.max_tool_calls
        if total is not None and self._counts.total() >= total:
            where = self._sources.get(MAX_TOOL_CALLS, "policy.max_tool_calls")
            raise QuotaExceeded(
                f"{name}: quota of {total} tool calls per execution reached ({where})",
                quota=where,
                limit=total,
            )
        source = self._sources.get(name) or f"policy.tools[{json.dumps(name)}]"
        if rules is not None and rules.max_calls is not None and self._counts[name] >= rules.max_calls:
            where = f"{source}.max_calls"
            raise QuotaExceeded(
                f"{name}: quota of {rules.max_calls} calls per execution reached ({where})",
                quota=where,
                limit=rules.max_calls,
            )
        return source

    def _window(self, name: str, rate: RateLimit) -> str:
        """The rate window a call of `name` counts in: the tool's, or the tool's for this caller."""
        if rate.per == "gateway":
            return json.dumps([name])
        owner = self._owner
        return json.dumps([name, None if owner is None else [owner.issuer, owner.principal]])

    async def release(self, entry: CatalogEntry) -> None:
        """Take back the last `acquire` of `entry`: the call did not happen (its run paused before it)."""
        name = entry.qualified
        with self._lock:
            if self._counts[name] > 0:
                self._counts[name] -= 1
            last, self._last_rate = self._last_rate, None
        if last is not None and last[0] == name:
            with contextlib.suppress(StateUnavailable):  # the slot stays taken until it leaves its window
                await self._limiter.release(last[1], last[2])
        elif last is not None:
            self._last_rate = last

    def counts(self) -> dict[str, int]:
        """Calls per tool so far, for a paused run to carry into the round that resumes it."""
        with self._lock:
            return {name: count for name, count in self._counts.items() if count}

    def restore(self, counts: dict[str, int]) -> None:
        """Start from the counts a paused run carried (its calls are replayed, not acquired again)."""
        with self._lock:
            self._counts = Counter(counts)
