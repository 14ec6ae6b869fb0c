"""The component's entry point: one `run` per fresh instance."""

import builtins
import json
import sys
from typing import Any

import wit_world

from guest import _aio, _capabilities
from guest._capture import CappedStream
from guest._hostcall import ToolError
from guest._snippet import SnippetOutcome, run_snippet
from guest._tools import Blob, call_tool, tools

__all__ = ["WitWorld"]

_capabilities.install()
_aio.install()


def _truncation_note(stream: CappedStream, limit_key: str, limit: int) -> str:
    dropped = f"{stream.dropped} more bytes dropped"
    return f"\n[... {dropped}: {stream.name} is capped at {limit} bytes ({limit_key})]\n"


def _encode_value(outcome: SnippetOutcome, limit: int) -> tuple[str | None, str | None]:
    if not outcome.has_value:
        return None, None
    value = outcome.value
    shown = repr(value)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        encoded = json.dumps(shown, ensure_ascii=False)
    if len(encoded.encode()) > limit or len(shown.encode()) > limit:
        shown = shown.encode()[:limit].decode("utf-8", "ignore")
        shown += f"... [value truncated: capped at {limit} bytes (sandbox.max_value_bytes)]"
        encoded = json.dumps(shown, ensure_ascii=False)
    return encoded, shown


class WitWorld(wit_world.WitWorld):
    def run(self, code: str, options: wit_world.RunOptions) -> wit_world.Outcome:
        _capabilities.reseed(options.seed)
        out = CappedStream(options.max_stdout_bytes, "stdout")
        err = CappedStream(options.max_stderr_bytes, "stderr")
        sys.stdout = sys.__stdout__ = out  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = err  # type: ignore[misc]
        namespace: dict[str, Any] = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "tools": tools,
            "call_tool": call_tool,
            "ToolError": ToolError,
            "Blob": Blob,
        }
        outcome = run_snippet(code, namespace)
        value_json, value_repr = _encode_value(outcome, options.max_value_bytes)
        stdout, stderr = out.getvalue(), err.getvalue()
        if out.dropped:
            stdout += _truncation_note(out, "sandbox.max_stdout_bytes", options.max_stdout_bytes)
        if err.dropped:
            stderr += _truncation_note(err, "sandbox.max_stderr_bytes", options.max_stderr_bytes)
        failure = None
        if outcome.error is not None:
            failure = wit_world.Failure(
                type=type(outcome.error).__name__,
                message=str(outcome.error),
                traceback=outcome.traceback,
            )
        return wit_world.Outcome(
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=bool(out.dropped),
            stderr_truncated=bool(err.dropped),
            value_json=value_json,
            value_repr=value_repr,
            error=failure,
        )
