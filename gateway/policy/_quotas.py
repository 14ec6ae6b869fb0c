"""Call quotas: per-execution call counts and the sliding-window rate limits.

`policy.max_tool_calls` and `policy.tools[name].max_calls` count within one execution;
`policy.tools[name].rate` is shared by every execution of one gateway, in one window for every
caller or in one per caller (`per: "principal"`): per `Owner`, the principal together with the
issuer that vouched for it, so that a JWT's `sub` never shares a static token's window of that name.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping

from gateway.auth import Owner
from gateway.catalog import CatalogEntry
from gateway.errors import QuotaExceeded
from gateway.policy.config import PolicyConfig, RateLimit

__all__ = ["MAX_TOOL_CALLS", "Clock", "ExecutionQuota", "RateLimiter"]

Clock = Callable[[], float]

MAX_TOOL_CALLS = "max_tool_calls"
"""The key, among a policy's sources (tool names otherwise), of where its max_tool_calls was written."""


def _seconds(value: float) -> str:
    return f"{value:g}"


class RateLimiter:
    """Sliding-window call counts per tool, shared by every execution of one gateway."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._calls: dict[Hashable, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, name: Hashable, rate: RateLimit, where: str, *, shown: str | None = None) -> float:
        """Record a call in window `name` now and return its time, or raise QuotaExceeded (naming the
        tool as `shown`, by default `name`) if the window is full."""
        with self._lock:
            now = self._clock()
            self._full(name, rate, where, now, shown or str(name))
            self._calls.setdefault(name, deque()).append(now)
            return now

    def release(self, name: Hashable, stamp: float) -> None:
        """Forget the call of `name` recorded at `stamp` (it never happened)."""
        with self._lock:
            window = self._calls.get(name)
            if window is not None and stamp in window:
                window.remove(stamp)

    def _full(self, name: Hashable, rate: RateLimit, where: str, now: float, shown: str) -> None:
        window = self._calls.get(name)
        if window is None:
            return
        while window and window[0] <= now - rate.per_seconds:
            window.popleft()
        if len(window) >= rate.calls:
            wait = window[0] + rate.per_seconds - now
            whose = " for each caller" if rate.per == "principal" else ""
            raise QuotaExceeded(
                f"{shown}: rate limit of {rate.calls} calls per {_seconds(rate.per_seconds)} seconds"
                f"{whose} reached ({where}); try again in {wait:.1f} s",
                quota=where,
                limit=rate.calls,
                retry_after=wait,
            )


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
        self._last_rate: tuple[str, Hashable, float] | None = None
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
            if rules is not None and rules.rate is not None:
                window = name if rules.rate.per == "gateway" else (name, self._owner)
                stamp = self._limiter.acquire(window, rules.rate, f"{source}.rate", shown=name)
                self._last_rate = (name, window, stamp)
            self._counts[name] += 1

    def release(self, entry: CatalogEntry) -> None:
        """Take back the last `acquire` of `entry`: the call did not happen (its run paused before it)."""
        name = entry.qualified
        with self._lock:
            if self._counts[name] > 0:
                self._counts[name] -= 1
            if self._last_rate is not None and self._last_rate[0] == name:
                self._limiter.release(*self._last_rate[1:])
                self._last_rate = None

    def counts(self) -> dict[str, int]:
        """Calls per tool so far, for a paused run to carry into the round that resumes it."""
        with self._lock:
            return {name: count for name, count in self._counts.items() if count}

    def restore(self, counts: dict[str, int]) -> None:
        """Start from the counts a paused run carried (its calls are replayed, not acquired again)."""
        with self._lock:
            self._counts = Counter(counts)
