"""Every escape case: the hostile snippet is contained and the sandbox serves the next execution."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from gateway import Sandbox, SandboxLimits
from gateway._escapes import CASES, EscapeCase, run_case

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

# Tighter than the defaults so CPU and wall-time cases end in about a second each.
SUITE_LIMITS = SandboxLimits(fuel=5_000_000_000, timeout_seconds=4, max_concurrent_executions=2)


@pytest.fixture(scope="module")
def suite_sandbox() -> Iterator[Sandbox]:
    with Sandbox(SUITE_LIMITS) as sandbox:
        yield sandbox


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_snippet_is_contained_and_the_sandbox_still_serves(
    suite_sandbox: Sandbox, case: EscapeCase
) -> None:
    with anyio.fail_after(30):
        outcome = await run_case(suite_sandbox, case)
    assert outcome.contained, outcome.detail
    assert outcome.still_serves, "the sandbox did not serve a normal snippet after the case"


def test_suite_covers_every_category() -> None:
    categories = {case.category for case in CASES}
    assert {
        "filesystem",
        "network",
        "processes",
        "environment",
        "cpu",
        "wall-time",
        "memory",
        "stack",
        "output",
        "tools",
        "host-calls",
        "imports",
        "input",
    } <= categories
    assert len({case.id for case in CASES}) == len(CASES)
