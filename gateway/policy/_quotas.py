"""Call quotas: per-execution call counts and the gateway-wide sliding-window rate limits.

`policy.max_tool_calls` and `policy.tools[name].max_calls` count within one execution;
`policy.tools[name].rate` is shared by every execution of one gateway.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable

from gateway.catalog import CatalogEntry
from gateway.errors import QuotaExceeded
from gateway.policy.config import PolicyConfig, RateLimit

__all__ = ["Clock", "ExecutionQuota", "RateLimiter"]

Clock = Callable[[], float]


def _seconds(value: float) -> str:
    return f"{value:g}"


class RateLimiter:
    """Sliding-window call counts per tool, shared by every execution of one gateway."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, name: str, rate: RateLimit, where: str) -> float:
        """Record a call of `name` now and return its time, or raise QuotaExceeded if its window is full."""
        with self._lock:
            now = self._clock()
            self._full(name, rate, where, now)
            self._calls.setdefault(name, deque()).append(now)
            return now

    def release(self, name: str, stamp: float) -> None:
        """Forget the call of `name` recorded at `stamp` (it never happened)."""
        with self._lock:
            window = self._calls.get(name)
            if window is not None and stamp in window:
                window.remove(stamp)

    def _full(self, name: str, rate: RateLimit, where: str, now: float) -> None:
        window = self._calls.get(name)
        if window is None:
            return
        while window and window[0] <= now - rate.per_seconds:
            window.popleft()
        if len(window) >= rate.calls:
            wait = window[0] + rate.per_seconds - now
            raise QuotaExceeded(
                f"{name}: rate limit of {rate.calls} calls per {_seconds(rate.per_seconds)} seconds "
                f"reached ({where}); try again in {wait:.1f} s",
                quota=where,
                limit=rate.calls,
                retry_after=wait,
            )


class ExecutionQuota:
    """One execution's tool-call counts against the policy's quotas (and the shared rate limits)."""

    def __init__(self, config: PolicyConfig, limiter: RateLimiter) -> None:
        self._config = config
        self._limiter = limiter
        self._counts: Counter[str] = Counter()
        self._last_rate: tuple[str, float] | None = None  # what `release` takes back from the limiter
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """Calls acquired so far in this execution."""
        return self._counts.total()

    def acquire(self, entry: CatalogEntry) -> None:
        """Count a call of `entry`, or raise QuotaExceeded and count nothing."""
        self.acquire_name(entry.qualified)

    def acquire_name(self, name: str) -> None:
        """Count a call by name: a tool's qualified name, or what else a snippet asks of a child (a
        resource read, `server:uri`), which only `policy.max_tool_calls` limits."""
        rules = self._config.tools.get(name)
        with self._lock:
            total = self._config.max_tool_calls
            if total is not None and self._counts.total() >= total:
                raise QuotaExceeded(
                    f"{name}: quota of {total} tool calls per execution reached (policy.max_tool_calls)",
                    quota="policy.max_tool_calls",
                    limit=total,
                )
            if rules is not None and rules.max_calls is not None and self._counts[name] >= rules.max_calls:
                where = f"policy.tools[{json.dumps(name)}].max_calls"
                raise QuotaExceeded(
                    f"{name}: quota of {rules.max_calls} calls per execution reached ({where})",
                    quota=where,
                    limit=rules.max_calls,
                )
            if rules is not None and rules.rate is not None:
                stamp = self._limiter.acquire(name, rules.rate, f"policy.tools[{json.dumps(name)}].rate")
                self._last_rate = (name, stamp)
            self._counts[name] += 1

    def release(self, entry: CatalogEntry) -> None:
        """Take back the last `acquire` of `entry`: the call did not happen (its run paused before it)."""
        name = entry.qualified
        with self._lock:
            if self._counts[name] > 0:
                self._counts[name] -= 1
            if self._last_rate is not None and self._last_rate[0] == name:
                self._limiter.release(*self._last_rate)
                self._last_rate = None

    def counts(self) -> dict[str, int]:
        """Calls per tool so far, for a paused run to carry into the round that resumes it."""
        with self._lock:
            return {name: count for name, count in self._counts.items() if count}

    def restore(self, counts: dict[str, int]) -> None:
        """Start from the counts a paused run carried (its calls are replayed, not acquired again)."""
        with self._lock:
            self._counts = Counter(counts)
