"""The guest's outcome, validated as the untrusted input it is, turned into an ExecutionResult."""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.errors import ExecutionFailed, GuestCrashed, SnippetError
from gateway.sandbox._host_call import Execution
from gateway.sandbox._traps import memory_limit_error
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult

__all__ = ["failed_result", "outcome_result"]

# Room for truncation notes and JSON escaping on top of the caps the guest was given.
_SLACK_BYTES = 4096


class _GuestFailure(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    message: str
    traceback: str = ""


class _GuestOutcome(BaseModel):
    model_config = ConfigDict(extra="ignore")

    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    value: Any = None
    value_repr: str | None = None
    error: _GuestFailure | None = None


def _capped(text: str, limit: int) -> tuple[str, bool]:
    # The guest caps its own streams; this holds even if a snippet tampered with the guest's capture.
    data = text.encode()
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore") + f"\n[... truncated at {limit} bytes by the host]\n", True


def _elapsed_ms(execution: Execution) -> float:
    return round((time.monotonic() - execution.started) * 1000, 3)


def failed_result(execution: Execution, error: ExecutionFailed, *, fuel: int) -> ExecutionResult:
    """The result of an execution that a limit, a trap or a refusal ended."""
    return ExecutionResult(
        ok=False,
        error=ErrorInfo.from_exception(error),
        tool_calls=execution.tool_calls,
        fuel=fuel,
        ms=_elapsed_ms(execution),
    )


def _snippet_error(failure: _GuestFailure, limits: SandboxLimits) -> ErrorInfo:
    if failure.type == "MemoryError":
        # A failed memory.grow surfaces in the guest as MemoryError: name the limit behind it.
        return ErrorInfo.from_exception(memory_limit_error(limits))
    cap = limits.max_value_bytes
    return ErrorInfo.from_exception(
        SnippetError(
            _capped(failure.message, cap)[0],
            exc_type=failure.type[:200],
            traceback=_capped(failure.traceback, cap)[0],
        )
    )


def outcome_result(
    execution: Execution, outcome_json: str, limits: SandboxLimits, *, fuel: int
) -> ExecutionResult:
    """Check the guest's JSON outcome against its schema and its caps, then describe it."""
    ceiling = (
        2 * (limits.max_stdout_bytes + limits.max_stderr_bytes + 3 * limits.max_value_bytes) + _SLACK_BYTES
    )
    try:
        if len(outcome_json) > ceiling:
            raise ValueError(f"{len(outcome_json)} characters")
        outcome = _GuestOutcome.model_validate_json(outcome_json)
    except (ValidationError, ValueError) as exc:
        # Only a snippet that tampered with the guest's own code gets here.
        detail = str(exc).splitlines()[0][:200]
        return failed_result(
            execution, GuestCrashed(f"the sandbox returned a malformed outcome ({detail})"), fuel=fuel
        )
    stdout, stdout_cut = _capped(outcome.stdout, limits.max_stdout_bytes + 512)
    stderr, stderr_cut = _capped(outcome.stderr, limits.max_stderr_bytes + 512)
    error = None if outcome.error is None else _snippet_error(outcome.error, limits)
    value_repr = _capped(outcome.value_repr or "", limits.max_value_bytes + 512)[0] or None
    value = outcome.value
    if len(json.dumps(value, ensure_ascii=False).encode()) > limits.max_value_bytes + 512:
        value = value_repr  # the guest capped it unless the snippet tampered with the guest: cap again
    return ExecutionResult(
        ok=error is None,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=outcome.stdout_truncated or stdout_cut,
        stderr_truncated=outcome.stderr_truncated or stderr_cut,
        value=value,
        value_repr=value_repr,
        error=error,
        tool_calls=execution.tool_calls,
        fuel=fuel,
        ms=_elapsed_ms(execution),
    )
