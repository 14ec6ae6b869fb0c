"""An escape case is judged on containment: any limit that stops it contains it, whichever fired first."""

from __future__ import annotations

import anyio
import pytest

from gateway import Sandbox, SandboxLimits
from gateway.escape._runner import SandboxTarget, run_case
from gateway.escape.cases import CASES
from gateway.escape.cases._model import HANG_SECONDS, LIMIT_KEYS, limit, refused, value_is, within_budget
from gateway.sandbox.result import ErrorInfo, ExecutionResult

LIMITS = SandboxLimits(timeout_seconds=1.5)
FUEL_OR_MEMORY = limit("FuelExhausted", "MemoryLimitExceeded")


def stopped_by(error: str, *, ms: float = 100.0, names_key: bool = True) -> ExecutionResult:
    """A result the limit `error` ended, its message naming the limit's key (or not)."""
    key = LIMIT_KEYS[error] if names_key else "a limit"
    return ExecutionResult(
        ok=False, error=ErrorInfo(type=error, category="limit", message=f"over {key}"), ms=ms
    )


def test_a_memory_case_the_wall_clock_stopped_first_is_contained() -> None:
    assert FUEL_OR_MEMORY.judge(stopped_by("WallTimeExceeded"), LIMITS) is None


def test_a_cpu_case_the_memory_limit_stopped_first_is_contained() -> None:
    assert limit("FuelExhausted").judge(stopped_by("MemoryLimitExceeded"), LIMITS) is None


def test_a_case_looking_for_a_refusal_is_contained_by_the_wall_clock() -> None:
    expect = refused("ToolError", "does not match")
    assert expect.judge(stopped_by("WallTimeExceeded"), LIMITS) is None


def test_a_case_looking_for_a_value_is_contained_by_the_wall_clock() -> None:
    assert value_is(5).judge(stopped_by("WallTimeExceeded"), LIMITS) is None


def test_a_case_looking_for_a_refusal_is_not_contained_by_running_out_of_fuel() -> None:
    # Fuel is counted, not timed: running out of it where a refusal was due means the refusal is gone.
    problem = refused("PermissionError", "no filesystem").judge(stopped_by("FuelExhausted"), LIMITS)
    assert problem is not None
    assert "PermissionError" in problem


def test_a_limit_that_fired_first_must_still_name_its_config_key() -> None:
    problem = FUEL_OR_MEMORY.judge(stopped_by("WallTimeExceeded", names_key=False), LIMITS)
    assert problem is not None
    assert "sandbox.timeout_seconds" in problem


def test_a_late_answer_from_a_loaded_machine_is_within_the_budget_check() -> None:
    late = stopped_by("WallTimeExceeded", ms=LIMITS.timeout_seconds * 4 * 1000)
    assert within_budget(late, LIMITS)
    assert limit("WallTimeExceeded", check=within_budget).judge(late, LIMITS) is None


def test_an_execution_that_held_the_host_past_the_hang_bound_is_not_contained() -> None:
    held = stopped_by("WallTimeExceeded", ms=(HANG_SECONDS + 1) * 1000)
    problem = limit("WallTimeExceeded").judge(held, LIMITS)
    assert problem is not None
    assert f"{HANG_SECONDS:g} s" in problem
    assert not within_budget(held, LIMITS)


@pytest.mark.anyio
async def test_a_memory_case_under_a_budget_too_short_for_it_is_contained_and_the_sandbox_serves() -> None:
    # Fuel and memory to spare: only the wall clock can stop the array's growth, the way a loaded
    # machine makes it stop first under the suite's own limits.
    case = next(case for case in CASES if case.id == "mem-array-of-doubles")
    limits = SandboxLimits(timeout_seconds=0.2, fuel=10**13, max_concurrent_executions=1)
    with Sandbox(limits) as sandbox, anyio.fail_after(60):
        outcome = await run_case(SandboxTarget(sandbox), case)
    assert outcome.status == "pass", outcome.detail
    assert outcome.detail.startswith("WallTimeExceeded"), outcome.detail
