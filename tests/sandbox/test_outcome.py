"""The guest's outcome JSON, checked as untrusted input and re-capped by the host, as an ExecutionResult."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.errors import WallTimeExceeded
from gateway.sandbox._host_call import ExecutionState
from gateway.sandbox._outcome import failed_result, outcome_result
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ToolCallRecord

LIMITS = SandboxLimits(max_stdout_bytes=100, max_stderr_bytes=50, max_value_bytes=256)
# The largest outcome the host reads for LIMITS: six JSON characters (a `\u0001` escape) per byte
# of every cap, plus slack.
CEILING = 6 * (100 + 50 + 3 * 256) + 4096


def execution() -> ExecutionState:
    state = ExecutionState(LIMITS, timeout=5.0, services=None)
    state.tool_calls.append(ToolCallRecord(tool="m.add", ms=1.5, ok=True))
    return state


def outcome(**fields: Any) -> str:
    return json.dumps(fields, ensure_ascii=False)  # as the guest writes it


def test_a_well_formed_outcome_is_described_with_the_executions_tool_calls_and_fuel() -> None:
    result = outcome_result(
        execution(), outcome(stdout="hi\n", value=[1, 2], value_repr="[1, 2]"), LIMITS, fuel=42
    )
    assert result.ok
    assert (result.stdout, result.value, result.value_repr) == ("hi\n", [1, 2], "[1, 2]")
    assert not result.stdout_truncated
    assert [call.tool for call in result.tool_calls] == ["m.add"]
    assert result.fuel == 42
    assert result.ms >= 0


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '{"stdout": 5}',
        '{"error": {"type": "ValueError"}}',
        '{"stdout_truncated": "maybe"}',
    ],
)
def test_a_malformed_outcome_is_a_guest_crash(text: str) -> None:
    result = outcome_result(execution(), text, LIMITS, fuel=7)
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "GuestCrashed"
    assert result.error.message.startswith("the sandbox returned a malformed outcome (")
    assert "\n" not in result.error.message
    assert result.fuel == 7
    assert len(result.tool_calls) == 1


def test_an_outcome_over_the_ceiling_is_refused_before_it_is_parsed() -> None:
    text = outcome(stdout="x" * CEILING)
    result = outcome_result(execution(), text, LIMITS, fuel=0)
    assert result.error is not None
    assert result.error.type == "GuestCrashed"
    assert f"{len(text)} characters" in result.error.message


def test_the_host_caps_stdout_and_stderr_even_when_the_guest_did_not() -> None:
    result = outcome_result(execution(), outcome(stdout="o" * 2000, stderr="é" * 1000), LIMITS, fuel=0)
    assert result.ok
    assert result.stdout_truncated
    assert result.stderr_truncated
    assert result.stdout.startswith("o" * 612)
    assert "o" * 613 not in result.stdout
    assert result.stdout.endswith("[... truncated at 612 bytes by the host]\n")
    kept = result.stderr.split("\n")[0]
    assert kept == "é" * 281  # 562 bytes cut on a character boundary
    assert "truncated at 562 bytes" in result.stderr


def test_the_guests_own_truncation_flags_are_kept() -> None:
    result = outcome_result(execution(), outcome(stdout="short", stdout_truncated=True), LIMITS, fuel=0)
    assert result.stdout == "short"
    assert result.stdout_truncated
    assert not result.stderr_truncated


def test_an_oversized_value_is_replaced_by_its_capped_repr() -> None:
    big = ["v" * 100] * 20
    result = outcome_result(execution(), outcome(value=big, value_repr=repr(big)), LIMITS, fuel=0)
    assert result.value_repr is not None
    assert len(result.value_repr.encode()) < 768 + 100
    assert result.value_repr.startswith("['vvvv")
    assert "truncated at 768 bytes" in result.value_repr
    assert result.value == result.value_repr


def test_a_memory_error_in_the_snippet_is_reported_as_the_memory_limit() -> None:
    failure = {"type": "MemoryError", "message": "", "traceback": "Traceback ...\nMemoryError\n"}
    result = outcome_result(execution(), outcome(error=failure), LIMITS, fuel=0)
    assert not result.ok
    assert result.error is not None
    assert (result.error.type, result.error.category) == ("MemoryLimitExceeded", "limit")
    assert "sandbox.memory_bytes" in result.error.message


def test_a_snippet_error_keeps_its_type_and_traceback_with_message_and_type_capped() -> None:
    failure = {"type": "E" * 300, "message": "m" * 2000, "traceback": "Traceback (most recent call last):\n"}
    result = outcome_result(execution(), outcome(error=failure), LIMITS, fuel=0)
    assert result.error is not None
    assert result.error.category == "snippet"
    assert result.error.type == "E" * 200
    assert result.error.message.startswith("m" * 256)
    assert "m" * 257 not in result.error.message
    assert result.error.traceback == "Traceback (most recent call last):\n"


def test_a_failed_result_carries_the_error_the_tool_calls_and_the_fuel_and_no_output() -> None:
    result = failed_result(execution(), WallTimeExceeded("too slow (sandbox.timeout_seconds)"), fuel=9)
    assert not result.ok
    assert result.error is not None
    assert (result.error.type, result.error.category) == ("WallTimeExceeded", "limit")
    assert result.error.message == "too slow (sandbox.timeout_seconds)"
    assert (result.stdout, result.stderr, result.value, result.value_repr) == ("", "", None, None)
    assert [call.tool for call in result.tool_calls] == ["m.add"]
    assert result.fuel == 9


def test_a_lone_surrogate_the_guest_escaped_in_its_output_is_not_a_malformed_outcome() -> None:
    result = outcome_result(execution(), '{"stdout": "a\\ud800b\\n"}', LIMITS, fuel=0)
    assert result.ok
    assert result.stdout == "a\ufffdb\n"


@pytest.mark.parametrize(
    ("value_json", "value"),
    [
        ('{"\\uDC00k": ["\\uDbFf"]}', {"\ufffdk": ["\ufffd"]}),  # upper and mixed case, in a key too
        ('"\\ud83d\\ude00"', "\U0001f600"),  # a pair is one character, not two lone halves
        ('"\\\\ud800"', "\\ud800"),  # an escaped backslash, then text: nothing to replace
    ],
    ids=["lone-in-key-and-list", "pair", "backslash-text"],
)
def test_only_lone_surrogates_become_replacement_characters_whichever_way_they_are_escaped(
    value_json: str, value: object
) -> None:
    result = outcome_result(execution(), f'{{"value": {value_json}}}', LIMITS, fuel=0)
    assert result.ok
    assert result.value == value


def test_an_outcome_within_every_cap_is_not_refused_for_its_json_escaping() -> None:
    limits = SandboxLimits(max_stdout_bytes=10_000, max_stderr_bytes=10_000, max_value_bytes=10_000)
    text = outcome(stdout="\x01" * 10_000, stderr="\x01" * 10_000)
    result = outcome_result(execution(), text, limits, fuel=0)
    assert result.ok
    assert result.stdout == "\x01" * 10_000
