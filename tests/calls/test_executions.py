"""One execution from the core's side: what its result looks like once redacted."""

from __future__ import annotations

from gateway.calls._executions import redacted_result
from gateway.sandbox.result import ErrorInfo, ExecutionResult, ToolCallRecord
from gateway.shared import Redactor

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"


def test_an_execution_result_is_redacted_everywhere_a_client_reads_it() -> None:
    redactor = Redactor({TOKEN: "GITHUB_TOKEN"})
    result = ExecutionResult(
        ok=False,
        stdout=f"out {TOKEN}\n",
        stderr=f"err {TOKEN}\n",
        value={"token": TOKEN},
        value_repr=repr({"token": TOKEN}),
        error=ErrorInfo(
            type="ToolError", category="snippet", message=f"bad {TOKEN}", traceback=f"Traceback...{TOKEN}"
        ),
        tool_calls=[
            ToolCallRecord(
                tool="github.search", ms=1.0, ok=False, error=f"refused {TOKEN}", message=f"told {TOKEN}"
            ),
            ToolCallRecord(tool="time.now", ms=1.0, ok=True),
        ],
        fuel=10,
        ms=2.0,
    )
    redacted = redacted_result(redactor, result)
    assert TOKEN not in redacted.model_dump_json()
    assert TOKEN in result.model_dump_json()  # the original is untouched
    assert redacted.stdout == "out [REDACTED:GITHUB_TOKEN]\n"
    assert redacted.value == {"token": "[REDACTED:GITHUB_TOKEN]"}
    assert redacted.error is not None
    assert redacted.error.message == "bad [REDACTED:GITHUB_TOKEN]"
    assert redacted.tool_calls[0].message == "told [REDACTED:GITHUB_TOKEN]"
    assert redacted.tool_calls[1] == result.tool_calls[1]
    assert (redacted.fuel, redacted.ms, redacted.ok) == (10, 2.0, False)


def test_a_redactor_without_secrets_returns_the_result_unchanged() -> None:
    result = ExecutionResult(ok=True, stdout="hello")
    assert redacted_result(Redactor(), result) is result


def test_every_output_is_withheld_when_one_of_them_holds_a_short_secret() -> None:
    # Withheld one by one, the outputs told which of the snippet's sets of candidates held the PIN.
    redactor = Redactor({"4821": "PIN"})
    result = ExecutionResult(
        ok=True, stdout="4820 4821 4822\n", stderr="0001 0002\n", value="5001 5002", value_repr="'5001 5002'"
    )
    redacted = redacted_result(redactor, result)
    assert redacted.stdout.startswith("[output withheld: it held the value of PIN")
    assert (redacted.stderr, redacted.value, redacted.value_repr) == ("", None, None)
    failed = result.model_copy(
        update={
            "ok": False,
            "stdout": "0001",
            "error": ErrorInfo(type="ValueError", category="snippet", message="4821", traceback="..."),
        }
    )
    redacted = redacted_result(redactor, failed)
    assert redacted.stdout == ""
    assert redacted.error is not None
    assert redacted.error.message.startswith("[output withheld")
    assert redacted.error.traceback is None
