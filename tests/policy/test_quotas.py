"""Quotas: calls per execution and per tool, and rate windows shared by every execution."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import QuotaExceeded, ToolCallError
from gateway.catalog import Catalog
from gateway.policy import ExecutionQuota
from gateway.policy._quotas import RateLimiter
from gateway.policy.config import PolicyConfig
from tests.policy.helpers import FakeClock, get, policy_of
from tests.real_servers import snapshot_catalog

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


# ---- quotas -------------------------------------------------------------------------------------


async def test_max_tool_calls_caps_the_calls_of_one_execution(real: Catalog) -> None:
    policy = policy_of(max_tool_calls=3)
    quota = policy.new_execution()
    for name in ("time.get_current_time", "git.git_status", "time.get_current_time"):
        await quota.acquire(get(real, name))
    with pytest.raises(QuotaExceeded) as caught:
        await quota.acquire(get(real, "memory.read_graph"))
    error = caught.value
    assert (
        str(error) == "memory.read_graph: quota of 3 tool calls per execution reached (policy.max_tool_calls)"
    )
    assert (error.kind, error.quota, error.limit, error.retry_after) == (
        "QuotaExceeded",
        "policy.max_tool_calls",
        3,
        None,
    )
    assert isinstance(error, ToolCallError)
    assert quota.calls == 3
    await policy.new_execution().acquire(get(real, "memory.read_graph"))  # the next execution starts afresh


async def test_a_quota_of_zero_refuses_the_first_call(real: Catalog) -> None:
    with pytest.raises(QuotaExceeded, match="quota of 0 tool calls"):
        await policy_of(max_tool_calls=0).new_execution().acquire(get(real, "time.get_current_time"))


async def test_max_calls_caps_one_tool_per_execution(real: Catalog) -> None:
    policy = policy_of(tools={"everything.get_sum": {"max_calls": 5}})
    quota = policy.new_execution()
    get_sum, echo = get(real, "everything.get_sum"), get(real, "everything.echo")
    for _ in range(5):
        await quota.acquire(get_sum)
    with pytest.raises(QuotaExceeded) as caught:
        await quota.acquire(get_sum)
    assert str(caught.value) == (
        "everything.get_sum: quota of 5 calls per execution reached "
        '(policy.tools["everything.get_sum"].max_calls)'
    )
    assert caught.value.quota == 'policy.tools["everything.get_sum"].max_calls'
    assert caught.value.limit == 5
    for _ in range(10):
        await quota.acquire(echo)
    await policy.new_execution().acquire(get_sum)


async def test_a_refused_call_counts_against_no_quota(real: Catalog) -> None:
    clock = FakeClock()
    policy = policy_of(
        clock,
        max_tool_calls=3,
        tools={"everything.get_sum": {"max_calls": 1, "rate": {"calls": 1, "per_seconds": 60}}},
    )
    get_sum, echo = get(real, "everything.get_sum"), get(real, "everything.echo")
    first = policy.new_execution()
    await first.acquire(get_sum)
    with pytest.raises(QuotaExceeded, match="max_calls"):
        await first.acquire(get_sum)
    second = policy.new_execution()
    with pytest.raises(QuotaExceeded, match="rate"):
        await second.acquire(get_sum)  # the rate refuses it: the execution's counts stay at zero
    assert second.calls == 0
    for _ in range(3):
        await second.acquire(echo)
    assert second.calls == 3


RATE_3_PER_60: dict[str, Any] = {"tools": {"everything.get_sum": {"rate": {"calls": 3, "per_seconds": 60}}}}


async def test_the_rate_window_slides_with_the_clock(real: Catalog) -> None:
    clock = FakeClock()
    policy = policy_of(clock, **RATE_3_PER_60)
    get_sum = get(real, "everything.get_sum")

    async def attempt(at: float) -> float | None:
        """The retry delay if the call at `at` is refused, else None."""
        clock.now = at
        try:
            await policy.new_execution().acquire(get_sum)
        except QuotaExceeded as exc:
            return exc.retry_after
        return None

    assert [await attempt(t) for t in (0, 10, 20)] == [None, None, None]
    assert await attempt(30) == pytest.approx(30.0)
    assert await attempt(59.9) == pytest.approx(0.1)
    assert await attempt(60) is None  # the call at 0 left the window
    assert await attempt(65) == pytest.approx(5.0)  # 10, 20 and 60 are in it
    assert await attempt(70) is None
    assert await attempt(200) is None
    assert [await attempt(200.5), await attempt(201)] == [None, None]
    assert await attempt(259.99) == pytest.approx(0.01)


async def test_a_rate_refusal_names_the_rate_and_when_to_retry(real: Catalog) -> None:
    clock = FakeClock()
    policy = policy_of(clock, tools={"everything.get_sum": {"rate": {"calls": 10, "per_seconds": 60}}})
    quota = policy.new_execution()
    for second in range(10):
        clock.now = float(second)
        await quota.acquire(get(real, "everything.get_sum"))
    clock.now = 47.5
    with pytest.raises(QuotaExceeded) as caught:
        await quota.acquire(get(real, "everything.get_sum"))
    assert str(caught.value) == (
        "everything.get_sum: rate limit of 10 calls per 60 seconds reached "
        '(policy.tools["everything.get_sum"].rate); try again in 12.5 s'
    )
    assert (caught.value.quota, caught.value.limit) == ('policy.tools["everything.get_sum"].rate', 10)
    assert caught.value.retry_after == pytest.approx(12.5)


async def test_the_rate_is_shared_by_every_execution_of_the_gateway(real: Catalog) -> None:
    clock = FakeClock()
    policy = policy_of(clock, **RATE_3_PER_60)
    get_sum = get(real, "everything.get_sum")
    executions = [policy.new_execution() for _ in range(3)]
    for quota in executions:
        await quota.acquire(get_sum)
    with pytest.raises(QuotaExceeded):
        await policy.new_execution().acquire(get_sum)
    other = policy_of(clock, **RATE_3_PER_60)  # another gateway keeps its own windows
    await other.new_execution().acquire(get_sum)


async def test_each_tool_has_its_own_rate_window(real: Catalog) -> None:
    clock = FakeClock()
    rate = {"rate": {"calls": 1, "per_seconds": 10}}
    policy = policy_of(clock, tools={"everything.get_sum": rate, "everything.echo": rate})
    quota = policy.new_execution()
    await quota.acquire(get(real, "everything.get_sum"))
    await quota.acquire(get(real, "everything.echo"))
    await quota.acquire(get(real, "time.get_current_time"))  # no rate of its own
    with pytest.raises(QuotaExceeded, match=r"everything\.echo: rate limit of 1 calls per 10 seconds"):
        await quota.acquire(get(real, "everything.echo"))


async def test_the_rate_limiter_stands_alone_with_an_injected_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    rate = (
        PolicyConfig.model_validate({"tools": {"a.b": {"rate": {"calls": 2, "per_seconds": 1.5}}}})
        .tools["a.b"]
        .rate
    )
    assert rate is not None
    await limiter.acquire("a.b", rate, "here", shown="a.b")
    await limiter.acquire("a.b", rate, "here", shown="a.b")
    with pytest.raises(QuotaExceeded, match=r"2 calls per 1\.5 seconds reached \(here\)"):
        await limiter.acquire("a.b", rate, "here", shown="a.b")
    clock.now = 1.5
    await limiter.acquire("a.b", rate, "here", shown="a.b")
    assert isinstance(policy_of().new_execution(), ExecutionQuota)
