"""The guest's outcome, validated as the untrusted input it is, turned into an ExecutionResult."""

from __future__ import annotations

import json
import re
import time
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.errors import ExecutionFailed, GuestCrashed, SnippetError
from gateway.sandbox._host_call import ExecutionState
from gateway.sandbox._traps import memory_limit_error
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult

__all__ = ["failed_result", "outcome_result"]

# Room for truncation notes on top of the caps the guest was given.
_SLACK_BYTES = 4096
# JSON text may spend up to 6 characters on one byte of a field (`\u0001`).
_MAX_ESCAPE_CHARS = 6
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A surrogate reaches the parsed outcome only from an escape (the text itself crossed as UTF-8): where
# the JSON has none, the walk that replaces lone ones has nothing to find (it costs more than parsing).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


# Built once: `json.loads` and `json.dumps` with options build a decoder or an encoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_not_json)
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(item) for item in cast("list[Any]", value)]
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {_replace_lone_surrogates(key): _replace_lone_surrogates(item) for key, item in items}
    return value


def _elapsed_ms(execution: ExecutionState) -> float:
    return round((time.monotonic() - execution.started) * 1000, 3)


def failed_result(execution: ExecutionState, error: ExecutionFailed, *, fuel: int) -> ExecutionResult:
    """The result of an execution that a limit, a trap or a refusal ended."""
    return ExecutionResult(
        ok=False,
        error=ErrorInfo.from_exception(error),
        tool_calls=execution.tool_calls,
        shown=execution.shown,
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
    execution: ExecutionState, outcome_json: str, limits: SandboxLimits, *, fuel: int
) -> ExecutionResult:
    """Check the guest's JSON outcome against its schema and its caps, then describe it."""
    fields = limits.max_stdout_bytes + limits.max_stderr_bytes + 3 * limits.max_value_bytes
    ceiling = _MAX_ESCAPE_CHARS * fields + _SLACK_BYTES
    try:
        if len(outcome_json) > ceiling:
            raise ValueError(f"{len(outcome_json)} characters")
        # The guest escapes lone surrogates (only UTF-8 crosses); JSON reads them back as text that
        # no client can take, so they become U+FFFD here.
        parsed = _DECODER.decode(outcome_json)
        if _SURROGATE_ESCAPE.search(outcome_json):
            parsed = _replace_lone_surrogates(parsed)
        outcome = _GuestOutcome.model_validate(parsed)
    except (ValidationError, ValueError, RecursionError) as exc:
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
    if value is not None and len(_ENCODER.encode(value).encode()) > limits.max_value_bytes + 512:
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
        shown=execution.shown,
        fuel=fuel,
        ms=_elapsed_ms(execution),
    )
