"""execute_code's result as the model reads it: what the snippet printed and its value, a line per failed
call, the full record only when asked, within the sizes Claude Code keeps."""

from __future__ import annotations

import json

from mcp import types

from gateway import ErrorInfo, ExecutionResult, SandboxLimits, ToolCallRecord
from gateway.server._results import (
    ERROR_TEXT_CHARS,
    FAILED_CALL_LINES,
    NO_OUTPUT,
    execution_tool_result,
    full_record,
    max_result_chars,
)

LIMITS = SandboxLimits()


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_printed_line_is_the_whole_text_and_nothing_is_structured() -> None:
    shaped = execution_tool_result(ExecutionResult(ok=True, stdout="1\n", fuel=823_256, ms=4.9))
    assert text_of(shaped) == "1"
    assert shaped.structured_content is None
    assert not shaped.is_error


def test_the_value_follows_the_output_as_its_repr_on_a_line_of_its_own() -> None:
    result = ExecutionResult(ok=True, stdout="rows: 2\n", value={"a": 1}, value_repr="{'a': 1}")
    assert text_of(execution_tool_result(result)) == "rows: 2\n{'a': 1}"


def test_a_run_with_nothing_to_say_says_so_in_one_word() -> None:
    assert text_of(execution_tool_result(ExecutionResult(ok=True))) == NO_OUTPUT


def test_successful_calls_cost_nothing_and_each_failed_one_is_one_line() -> None:
    calls = [ToolCallRecord(tool="tiny.echo", ms=1.0, ok=True)] * 100
    failed_call = ToolCallRecord(tool="tiny.die", ms=3.0, ok=False, error="ChildUnavailable", message="gone")
    quiet = execution_tool_result(ExecutionResult(ok=True, stdout="ok\n", tool_calls=calls))
    loud = execution_tool_result(ExecutionResult(ok=True, stdout="ok\n", tool_calls=[*calls, failed_call]))
    assert text_of(quiet) == "ok"
    assert text_of(loud) == "ok\n[tiny.die failed: gone]"


def test_past_a_few_failed_calls_one_line_counts_the_rest() -> None:
    calls = [
        ToolCallRecord(tool=f"s.t{i}", ms=1.0, ok=False, error="ToolError", message="no") for i in range(40)
    ]
    lines = text_of(execution_tool_result(ExecutionResult(ok=True, tool_calls=calls))).splitlines()
    assert len(lines) == FAILED_CALL_LINES + 1
    assert lines[-1] == f"[{40 - FAILED_CALL_LINES} more failed calls: details=true lists every call]"


def test_details_give_the_full_record_as_text_and_as_structured_content_alike() -> None:
    result = ExecutionResult(
        ok=True,
        stdout="1\n",
        value={"k": "v"},
        value_repr="{'k': 'v'}",
        tool_calls=[ToolCallRecord(tool="tiny.echo", ms=1.5, ok=True)],
        fuel=42,
        ms=3.5,
    )
    shaped = execution_tool_result(result, details=True)
    assert shaped.structured_content == full_record(result)
    assert json.loads(text_of(shaped)) == shaped.structured_content
    assert shaped.structured_content["tool_calls"] == [
        {"tool": "tiny.echo", "ms": 1.5, "ok": True, "error": None, "message": None}
    ]
    assert (shaped.structured_content["fuel"], shaped.structured_content["ms"]) == (42, 3.5)
    assert "value_repr" not in shaped.structured_content


def test_a_result_at_every_default_cap_stays_under_the_size_it_announces() -> None:
    result = ExecutionResult(
        ok=True,
        stdout="o" * LIMITS.max_stdout_bytes,
        stderr="e" * LIMITS.max_stderr_bytes,
        value="v" * LIMITS.max_value_bytes,
        value_repr="v" * LIMITS.max_value_bytes,
        tool_calls=[ToolCallRecord(tool="server.some_tool_name", ms=1234.567, ok=False, message="m" * 200)]
        * LIMITS.max_tool_calls,
        fuel=LIMITS.fuel,
        ms=29_999.999,
    )
    assert len(text_of(execution_tool_result(result))) < max_result_chars(LIMITS) < 50_000


def failed(stdout: str = "", stderr: str = "", traceback: str = "") -> ExecutionResult:
    error = ErrorInfo(type="ValueError", category="snippet", message="bad", traceback=traceback or None)
    return ExecutionResult(ok=False, stdout=stdout, stderr=stderr, error=error)


def test_an_error_text_stays_under_claude_codes_limit_and_ends_with_the_whole_error() -> None:
    traceback = "Traceback (most recent call last):\n" + "  frame\n" * 300 + "ValueError: bad"
    text = text_of(execution_tool_result(failed("o" * 60_000, "e" * 20_000, traceback)))
    assert len(text) <= ERROR_TEXT_CHARS
    assert text.endswith(traceback)
    assert "characters of stdout cut here" in text
    assert "characters of stderr cut here" in text
    assert "Print less, or catch the error and print a summary." in text


def test_a_small_part_is_kept_whole_while_a_large_one_gives_way() -> None:
    text = text_of(execution_tool_result(failed("o" * 60_000, "warning: small\n")))
    assert "[stderr]\nwarning: small" in text
    assert "stderr cut here" not in text
    assert text.count("o") > ERROR_TEXT_CHARS // 2  # stdout takes the room the others leave
    assert len(text) <= ERROR_TEXT_CHARS


def test_a_huge_traceback_keeps_its_start_and_its_last_line() -> None:
    traceback = "Traceback (most recent call last):\n" + "x" * 50_000 + "\nValueError: the last line"
    text = text_of(execution_tool_result(failed(traceback=traceback)))
    assert text.startswith("Traceback (most recent call last):")
    assert text.endswith("ValueError: the last line")
    assert "characters of the traceback cut here" in text
    assert len(text) <= ERROR_TEXT_CHARS


def test_an_error_with_little_output_is_shown_whole() -> None:
    text = text_of(execution_tool_result(failed("step 1\n", "", "Traceback\nValueError: bad")))
    assert text == "step 1\nTraceback\nValueError: bad"


def test_an_error_drops_the_tracebacks_position_markers_and_names_the_other_failed_calls() -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "<snippet>", line 3, in <module>\n'
        "    tools.tiny.die()\n"
        "    ~~~~~~~~~~~~~~^^\n"
        "ToolError: tiny.die: connection lost\n"
    )
    error = ErrorInfo(
        type="ToolError", category="snippet", message="tiny.die: connection lost", traceback=traceback
    )
    calls = [
        ToolCallRecord(tool="tiny.echo", ms=1.0, ok=False, error="ToolError", message="invalid arguments"),
        ToolCallRecord(
            tool="tiny.die", ms=2.0, ok=False, error="ToolError", message="tiny.die: connection lost"
        ),
    ]
    shaped = execution_tool_result(ExecutionResult(ok=False, error=error, tool_calls=calls))
    assert shaped.is_error
    assert text_of(shaped) == (
        "Traceback (most recent call last):\n"
        '  File "<snippet>", line 3, in <module>\n'
        "    tools.tiny.die()\n"
        "ToolError: tiny.die: connection lost\n"
        "[tiny.echo failed: invalid arguments]"
    )


def test_an_error_whose_message_leaves_its_tool_unnamed_gets_the_tools_name_alone() -> None:
    error = ErrorInfo(type="ToolError", category="snippet", message="this tool always fails")
    call = ToolCallRecord(
        tool="trace.fail", ms=1.0, ok=False, error="ToolError", message="this tool always fails"
    )
    text = text_of(execution_tool_result(ExecutionResult(ok=False, error=error, tool_calls=[call])))
    assert text == "ToolError: this tool always fails\n[trace.fail failed]"


def test_blank_output_alone_says_there_was_none() -> None:
    assert text_of(execution_tool_result(ExecutionResult(ok=True, stdout="\n\n", stderr="\n"))) == NO_OUTPUT
