"""Every escape case: the hostile snippet is contained and the target serves the next execution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import anyio
import anyio.from_thread
import pytest

from gateway import Sandbox, SandboxLimits
from gateway.escape._runner import (
    CaseOutcome,
    GatewayTarget,
    SandboxTarget,
    Target,
    gateway_target,
    run_case,
    suite_limits,
)
from gateway.escape.cases import CASES, CATEGORIES, EscapeCase

pytestmark = pytest.mark.sandbox

# The default config's limits, capped as `sandbox-test` caps them.
LIMITS = suite_limits(SandboxLimits())
SANDBOX_CASES = [case for case in CASES if case.target == "sandbox"]
GATEWAY_CASES = [case for case in CASES if case.target == "gateway"]


@pytest.fixture(scope="module")
def suite_sandbox() -> Iterator[Sandbox]:
    with Sandbox(LIMITS) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def gateway_portal() -> Iterator[tuple[anyio.from_thread.BlockingPortal, GatewayTarget]]:
    # One Gateway (and probe server) for every policy and secrets case, on its own event loop.
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(gateway_target(LIMITS)) as target,
    ):
        yield portal, target


# Past the suite's hang bound (HANG_SECONDS, 30 s), so that a held host fails as a judgment first.
CASE_SECONDS = 60


async def run_in_time(target: Target, case: EscapeCase) -> CaseOutcome:
    with anyio.fail_after(CASE_SECONDS):
        return await run_case(target, case)


@pytest.mark.anyio
@pytest.mark.parametrize("case", SANDBOX_CASES, ids=[c.id for c in SANDBOX_CASES])
async def test_hostile_snippet_is_contained_and_the_sandbox_still_serves(
    suite_sandbox: Sandbox, case: EscapeCase
) -> None:
    outcome = await run_in_time(SandboxTarget(suite_sandbox), case)
    assert outcome.status != "skip", f"the default limits skip this case: {outcome.detail}"
    assert outcome.status == "pass", outcome.detail


@pytest.mark.parametrize("case", GATEWAY_CASES, ids=[c.id for c in GATEWAY_CASES])
def test_policy_and_secrets_hold_through_the_gateway(
    gateway_portal: tuple[anyio.from_thread.BlockingPortal, GatewayTarget], case: EscapeCase
) -> None:
    portal, target = gateway_portal
    outcome = portal.call(run_in_time, target, case)
    assert outcome.status != "skip", f"the default limits skip this case: {outcome.detail}"
    assert outcome.status == "pass", outcome.detail


def test_suite_covers_every_category_with_unique_ids() -> None:
    counts = Counter(case.category for case in CASES)
    assert set(counts) >= {
        "filesystem",
        "network",
        "processes",
        "signals",
        "environment",
        "introspection",
        "imports",
        "native-code",
        "audit-hooks",
        "persistence",
        "entropy",
        "cpu",
        "memory",
        "stack",
        "output",
        "tools",
        "host-calls",
        "wall-time",
        "input",
        "policy",
        "secrets",
        "approvals",
        "roles",
        "middleware",
        "names",
    }
    assert tuple(counts) == CATEGORIES
    assert len(CASES) >= 150
    assert len({case.id for case in CASES}) == len(CASES)


def test_every_case_states_what_containment_means() -> None:
    for case in CASES:
        expect = case.expect
        assert expect.errors or expect.ok, case.id
        assert expect.describe(), case.id
        assert case.source(LIMITS).strip(), case.id
