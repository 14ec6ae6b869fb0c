"""How an outcome is named for the metrics and the spans, from what ended a call or an execution."""

from __future__ import annotations

import anyio
import pytest

from gateway.errors import (
    ApprovalRequired,
    ChildUnavailable,
    PolicyDenied,
    QuotaExceeded,
    SecretInArguments,
    ToolCallError,
)
from gateway.sandbox.result import ErrorInfo, ExecutionResult
from gateway.telemetry._telemetry import call_outcome, execution_outcome

pytestmark = pytest.mark.anyio


async def test_a_tool_call_is_named_by_what_ended_it() -> None:
    outcomes = {
        "ok": call_outcome(None),
        "tool_error": call_outcome(ToolCallError("x answered with an error"), tool_error=True),
        "denied": call_outcome(PolicyDenied("no", rule="deny")),
        "quota": call_outcome(QuotaExceeded("too many", quota="policy.max_calls", limit=1)),
        "unavailable": call_outcome(ChildUnavailable("down")),
        "error": call_outcome(ToolCallError("unknown tool")),
        "pending": call_outcome(ApprovalRequired("a.b", {})),
        "crash": call_outcome(RuntimeError("a bug")),
    }
    assert all(named == outcome for outcome, named in outcomes.items()), outcomes
    assert call_outcome(SecretInArguments("a secret")) == "denied"  # the run ended at this call
    caught: list[BaseException] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep(1)
        except anyio.get_cancelled_exc_class() as cancelled:
            caught.append(cancelled)
            raise
    assert [call_outcome(cancelled) for cancelled in caught] == ["cancelled"]


def test_an_execution_is_named_ok_or_by_its_errors_category() -> None:
    limit = ErrorInfo(type="FuelExhausted", category="limit", message="out of fuel")
    assert execution_outcome(ExecutionResult(ok=True)) == "ok"
    assert execution_outcome(ExecutionResult(ok=False, error=limit)) == "limit"
    assert execution_outcome(ExecutionResult(ok=False)) == "crash"
