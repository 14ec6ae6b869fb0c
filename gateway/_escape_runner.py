"""Run escape cases through a real Sandbox: each hostile snippet, then a normal one.

A case passes when its execution ended the expected way and the sandbox then served a normal
snippet (and a tool call) correctly. Anything the host raises is a failure, never an error of
the suite: a snippet must not be able to make the host fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import anyio

from gateway._errors import ToolCallError
from gateway._escape_cases import CASES, EscapeCase
from gateway._escape_cases._model import clip, succeeds, summarize
from gateway._limits import SandboxLimits
from gateway._result import ExecutionResult
from gateway._sandbox import Sandbox
from gateway.testing import InProcessTools

__all__ = [
    "SERVING_CASE",
    "SUITE_MAX_FUEL",
    "SUITE_MAX_TIMEOUT_SECONDS",
    "CaseOutcome",
    "Status",
    "cases_in",
    "probe_tools",
    "run_case",
    "run_suite",
    "still_serves",
    "suite_limits",
]

# The suite runs every CPU and wall-clock case to its limit: capping both keeps it to a minute
# or so whatever the config says, and the cases adapt to the capped values.
SUITE_MAX_FUEL = 1_000_000_000
SUITE_MAX_TIMEOUT_SECONDS = 1.5
_MAX_PROBE_BYTES = 10**8

Status = Literal["pass", "FAIL", "skip"]


def suite_limits(limits: SandboxLimits) -> SandboxLimits:
    """The config's limits, with fuel, wall-clock budget and per-call timeout capped for the suite."""
    timeout = min(limits.timeout_seconds, SUITE_MAX_TIMEOUT_SECONDS)
    return limits.model_copy(
        update={
            "fuel": min(limits.fuel, SUITE_MAX_FUEL),
            "timeout_seconds": timeout,
            # Below the budget, so that the per-call timeout itself is exercised too.
            "tool_call_timeout_seconds": min(limits.tool_call_timeout_seconds, timeout / 2),
            # Cases run one at a time: one execution slot is all the suite uses.
            "max_concurrent_executions": 1,
        }
    )


def probe_tools(fail_message: str = "probe failed") -> InProcessTools:
    """The in-process tools the tool-call cases use; each validates its own arguments."""

    async def slow(seconds: object = 0, **_: object) -> str:
        if not isinstance(seconds, int | float):
            raise ToolCallError("seconds must be a number")
        await anyio.sleep(max(0.0, float(seconds)))
        return "done"

    def crash(**_: object) -> None:
        raise RuntimeError("a bug in the tool caller")

    def fail(**_: object) -> None:
        raise ToolCallError(fail_message)

    def echo(**arguments: object) -> dict[str, object]:
        return arguments

    def big(n: object = 0, **_: object) -> str:
        if not isinstance(n, int) or not 0 <= n <= _MAX_PROBE_BYTES:
            raise ToolCallError(f"n must be an integer from 0 to {_MAX_PROBE_BYTES}")
        return "b" * n

    def weird(**_: object) -> object:
        return {1, 2}  # not JSON: the host must refuse to pass it on

    return InProcessTools(
        {
            "probe.echo": echo,
            "probe.big": big,
            "probe.fail": fail,
            "probe.slow": slow,
            "probe.crash": crash,
            "probe.weird": weird,
        }
    )


@dataclass(frozen=True)
class CaseOutcome:
    """How one case went: `detail` says what happened (or what went wrong)."""

    case: EscapeCase
    status: Status
    detail: str
    ms: float

    @property
    def passed(self) -> bool:
        return self.status != "FAIL"


_SERVES = "import random\nprint(sum(range(10)))\nrandom.random() < 1.0"
SERVING_CASE = EscapeCase("still-serves", "serving", _SERVES, succeeds(what="after every case"))
"""The final row of every run: the sandbox serves normal work after all the hostile cases."""


async def still_serves(sandbox: Sandbox) -> str | None:
    """None when a normal snippet and a tool call run correctly, else what went wrong."""
    try:
        normal = await sandbox.execute(_SERVES)
        if not (normal.ok and normal.stdout == "45\n" and normal.value is True):
            return f"a normal snippet failed: {summarize(normal)}"
        if sandbox.limits.max_tool_calls >= 1:
            call = await sandbox.execute("tools.probe.echo(n=1)", tool_caller=probe_tools())
            if not (call.ok and call.value == {"n": 1}):
                return f"a normal tool call failed: {summarize(call)}"
    except Exception as exc:  # the host itself failed: report it, never raise it
        return f"the host raised {type(exc).__name__}: {clip(exc)}"
    return None


class _HostFailed(Exception):
    """The host raised while running a snippet."""


async def _execute(sandbox: Sandbox, code: str) -> ExecutionResult:
    try:
        return await sandbox.execute(code, tool_caller=probe_tools())
    except Exception as exc:  # a snippet made the host fail: the most serious finding of all
        raise _HostFailed(f"the host raised {type(exc).__name__}: {clip(exc)}") from exc


async def _judge(sandbox: Sandbox, case: EscapeCase) -> tuple[bool, str]:
    limits = sandbox.limits
    try:
        first = await _execute(sandbox, case.source(limits))
        problem = case.expect.judge(first, limits)
        if problem is not None:
            return False, problem
        if case.then is not None:
            second = await _execute(sandbox, case.then)
            if case.then_check is not None and not case.then_check(first, second):
                return False, f"the next execution saw it: {summarize(second)}"
    except _HostFailed as failed:
        return False, str(failed)
    return True, summarize(first)


async def run_case(sandbox: Sandbox, case: EscapeCase) -> CaseOutcome:
    """Run one hostile snippet (and its follow-up), then check that the sandbox still serves."""
    reason = case.needs(sandbox.limits) if case.needs is not None else None
    if reason is not None:
        return CaseOutcome(case, "skip", reason, 0.0)
    started = time.monotonic()
    contained, detail = await _judge(sandbox, case)
    ms = (time.monotonic() - started) * 1000
    broken = await still_serves(sandbox)
    if broken is not None:
        contained, detail = False, f"{detail}; then the sandbox stopped serving: {broken}"
    return CaseOutcome(case, "pass" if contained else "FAIL", detail, round(ms, 1))


def cases_in(categories: Iterable[str] | None) -> tuple[EscapeCase, ...]:
    """Every case, or those in `categories`."""
    if categories is None:
        return CASES
    chosen = set(categories)
    return tuple(case for case in CASES if case.category in chosen)


async def run_suite(
    sandbox: Sandbox,
    cases: Iterable[EscapeCase],
    on_outcome: Callable[[CaseOutcome], None] | None = None,
) -> list[CaseOutcome]:
    """Run `cases` one at a time, then a final check that the sandbox still serves."""
    outcomes: list[CaseOutcome] = []

    def report(outcome: CaseOutcome) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    for case in cases:
        report(await run_case(sandbox, case))
    started = time.monotonic()
    broken = await still_serves(sandbox)
    ms = round((time.monotonic() - started) * 1000, 1)
    detail = broken or "a normal snippet and a tool call ran correctly"
    report(CaseOutcome(SERVING_CASE, "FAIL" if broken else "pass", detail, ms))
    return outcomes
