"""The runner's check that a target still serves: a wall-clock limit on a busy machine is retried."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.auth import Identity
from gateway.escape._runner import run_case, still_serves
from gateway.escape.cases._model import ROOMY_CLOCK_SECONDS, EscapeCase, Seen, roomy_clock, succeeds
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult

pytestmark = pytest.mark.anyio

SERVED = ExecutionResult(ok=True, stdout="45\n", value=True)
TIMED_OUT = "probe.echo timed out after 0.75 s (sandbox.tool_call_timeout_seconds)"
NORMAL_CALL = "tools.probe.echo(n=1)"


def tool_error(message: str) -> ExecutionResult:
    """A serving check whose tool call failed with `message`."""
    return ExecutionResult(
        ok=False, stdout="45\n", error=ErrorInfo(type="ToolError", category="snippet", message=message)
    )


class Flaky:
    """A target whose serving check (a normal snippet with a tool call) fails with `failures`, one per
    attempt, then works."""

    def __init__(self, failures: list[ExecutionResult]) -> None:
        self.failures = failures
        self.attempts = 0
        self.given: list[SandboxLimits | None] = []  # the limits each execution was given

    @property
    def limits(self) -> SandboxLimits:
        return SandboxLimits()

    async def execute(
        self,
        code: str,
        *,
        approve: bool = False,
        caller: Identity | None = None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        self.given.append(limits)
        if NORMAL_CALL not in code:
            return SERVED
        self.attempts += 1
        if self.failures:
            return self.failures.pop(0)
        return ExecutionResult(ok=True, stdout="45\n", value=[True, {"n": 1}])

    @property
    def normal_tool_call(self) -> tuple[str, object]:
        return NORMAL_CALL, {"n": 1}

    async def seen(self) -> Seen:
        return Seen()

    async def overview_until(self, ready: Callable[[str], bool]) -> bool:
        return ready("")


async def test_a_call_a_wall_clock_limit_cut_is_tried_again_and_then_serves() -> None:
    target = Flaky([tool_error(TIMED_OUT)] * 2)
    assert await still_serves(target) is None
    assert target.attempts == 3


async def test_a_target_that_times_out_every_time_has_stopped_serving() -> None:
    target = Flaky([tool_error(TIMED_OUT)] * 5)
    broken = await still_serves(target)
    assert broken is not None
    assert "sandbox.tool_call_timeout_seconds" in broken
    assert target.attempts == 3


async def test_a_wrong_answer_fails_at_once_without_another_try() -> None:
    target = Flaky([ExecutionResult(ok=True, stdout="45\n", value=[True, {"n": 2}])])
    broken = "a normal snippet with a tool call failed: ok: [True, {'n': 2}], stdout 3 chars"
    assert await still_serves(target) == broken
    assert target.attempts == 1


async def test_a_middleware_timeout_is_a_wall_clock_limit_too() -> None:
    late = "did not finish within 0.3 s (middleware_timeout_seconds)"
    target = Flaky([tool_error(f"middleware m {late}")])
    assert await still_serves(target) is None
    assert target.attempts == 2


async def test_a_case_about_another_limit_runs_each_execution_under_a_roomy_clock() -> None:
    target = Flaky([])
    case = EscapeCase("roomy", "serving", "1", succeeds(), then="2", limits=roomy_clock)
    assert (await run_case(target, case)).status == "pass"
    hostile, follow_up, *serving = target.given
    for given in (hostile, follow_up):
        assert given is not None
        assert given.timeout_seconds == ROOMY_CLOCK_SECONDS
        assert given.tool_call_timeout_seconds == ROOMY_CLOCK_SECONDS / 2
    assert serving == [None]  # the serving check keeps the suite's own limits
