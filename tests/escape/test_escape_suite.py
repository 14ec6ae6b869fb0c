"""Every escape case: the hostile snippet is contained and the sandbox serves the next execution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import anyio
import pytest

from gateway import Sandbox, SandboxLimits
from gateway._escape_cases import CASES, CATEGORIES, EscapeCase
from gateway._escape_runner import run_case, suite_limits

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]


@pytest.fixture(scope="module")
def suite_sandbox() -> Iterator[Sandbox]:
    # The default config's limits, capped as `sandbox-test` caps them.
    with Sandbox(suite_limits(SandboxLimits())) as sandbox:
        yield sandbox


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_snippet_is_contained_and_the_sandbox_still_serves(
    suite_sandbox: Sandbox, case: EscapeCase
) -> None:
    with anyio.fail_after(60):
        outcome = await run_case(suite_sandbox, case)
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
    }
    assert tuple(counts) == CATEGORIES
    assert len(CASES) >= 150
    assert len({case.id for case in CASES}) == len(CASES)


def test_every_case_states_what_containment_means() -> None:
    for case in CASES:
        expect = case.expect
        assert expect.errors or expect.ok, case.id
        assert expect.describe(), case.id
        limits = suite_limits(SandboxLimits())
        assert case.source(limits).strip(), case.id
