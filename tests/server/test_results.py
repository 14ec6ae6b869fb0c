"""execute_code's result as clients take it: each output once, within the sizes Claude Code keeps."""

from __future__ import annotations

import json

from mcp import types

from gateway import ErrorInfo, ExecutionResult, SandboxLimits, ToolCallRecord
from gateway.server._results import ERROR_TEXT_CHARS, execution_tool_result, max_result_chars

LIMITS = SandboxLimits()


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_result_carries_each_output_once_in_its_text_and_once_in_its_structured_content() -> None:
    result = ExecutionResult(
        ok=True, stdout="printed-once\n", value={"k": "value-once"}, value_repr="{'k': 'value-once'}"
    )
    shaped = execution_tool_result(result)
    structured = json.dumps(shaped.structured_content)
    assert structured.count("printed-once") == 1
    assert structured.count("value-once") == 1
    assert "value_repr" not in structured
    assert text_of(shaped).count("printed-once") == 1
    assert text_of(shaped).count("value-once") == 1


def test_a_result_at_every_default_cap_stays_under_the_size_it_announces() -> None:
    result = ExecutionResult(
        ok=True,
        stdout="o" * LIMITS.max_stdout_bytes,
        stderr="e" * LIMITS.max_stderr_bytes,
        value="v" * LIMITS.max_value_bytes,
        value_repr="v" * LIMITS.max_value_bytes,
        tool_calls=[ToolCallRecord(tool="server.some_tool_name", ms=1234.567, ok=True)]
        * LIMITS.max_tool_calls,
        fuel=LIMITS.fuel,
        ms=29_999.999,
    )
    shaped = execution_tool_result(result)
    assert len(json.dumps(shaped.structured_content)) < max_result_chars(LIMITS) < 50_000
    assert len(text_of(shaped)) < max_result_chars(LIMITS)


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
