"""The component's entry point: one `run` per fresh instance."""

import builtins
import json
import linecache
import sys
from typing import Any

import wit_world

from guest import _aio, _capabilities, _heap
from guest._capture import CappedStream
from guest._hostcall import ToolError, boundary_json, parse_host_json
from guest._snippet import SNIPPET_FILENAME, SnippetOutcome, run_snippet
from guest._tools import Blob, call_tool, check_calls, defer, help, resources, search, show, tools

__all__ = ["WitWorld"]

_capabilities.install()
_aio.install()


def _truncation_note(stream: CappedStream, limit_key: str, limit: int) -> str:
    return (
        f"\n[{stream.name} cut here: {stream.dropped:,} more bytes not shown; it is capped at {limit:,} "
        f"bytes ({limit_key}). Print less: filter or summarise in code, and print only what you need.]\n"
    )


# The host refuses JSON nested deeper than this; deeper values come back as their repr.
MAX_VALUE_DEPTH = 64


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_VALUE_DEPTH:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType, reportUnknownArgumentType]
        elif isinstance(item, list | tuple):
            stack.extend((child, level + 1) for child in item)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return deepest


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _value_fields(outcome: SnippetOutcome, limit: int) -> dict[str, Any]:
    if not outcome.has_value:
        return {"value": None, "value_repr": None}
    value = outcome.value
    try:
        shown = repr(value)
    except Exception as exc:  # a snippet's own __repr__ may raise: report it, do not crash on it
        shown = f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
    try:
        if _depth(value) > MAX_VALUE_DEPTH:
            raise ValueError("too deeply nested for JSON")
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        value, encoded = shown, json.dumps(shown, ensure_ascii=False)
    # Lone surrogates are legal in Python text and are escaped at the boundary: count them, never fail.
    if _utf8_size(encoded) > limit or _utf8_size(shown) > limit:
        shown = shown.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
        shown += (
            f"... [value cut here at {limit:,} bytes (sandbox.max_value_bytes): end with a smaller "
            "value, such as a slice, a count or a summary]"
        )
        value = shown
    return {"value": value, "value_repr": shown}


def _stream_fields(name: str, stream: CappedStream, limit: int) -> dict[str, Any]:
    text = stream.getvalue()
    if stream.dropped:
        text += _truncation_note(stream, f"sandbox.max_{name}_bytes", limit)
    return {name: text, f"{name}_truncated": bool(stream.dropped)}


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception as exc:  # a snippet's own __str__ may raise: report it, do not crash on it
        return f"<str() of the {type(error).__name__} raised {type(exc).__name__}>"


def _cut_middle(text: str, limit: int, what: str) -> str:
    """`text` in at most `limit` UTF-8 bytes: its start and its end (a traceback's last line names
    the error), with a note where the middle was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    note = f"\n[... {what} cut here: it is capped at {limit:,} bytes (sandbox.max_value_bytes)]\n"
    half = max(limit - _utf8_size(note), 0) // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[len(data) - half :].decode("utf-8", "ignore") if half else ""
    return head + note + tail


def _show_last_value(outcome: SnippetOutcome) -> None:
    """A Blob (or a list of them) as the last expression is shown, as if passed to show()."""
    value: Any = outcome.value if outcome.has_value else None
    items: list[Any] = list(value) if isinstance(value, list | tuple) else [value]  # pyright: ignore[reportUnknownArgumentType]
    blobs = [item for item in items if isinstance(item, Blob)]
    if not blobs or len(blobs) != len(items):
        return
    try:
        show(*blobs)
    except (ToolError, TypeError) as exc:
        outcome.error, outcome.traceback = exc, f"{type(exc).__name__}: {exc}\n"


class WitWorld(wit_world.WitWorld):
    def run(self, code: str, options_json: str) -> str:
        options = parse_host_json(options_json)
        _capabilities.reseed(bytes.fromhex(options["seed"]))
        out = CappedStream(options["max_stdout_bytes"], "stdout")
        err = CappedStream(options["max_stderr_bytes"], "stderr")
        sys.stdout = sys.__stdout__ = out  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = err  # type: ignore[misc]
        namespace: dict[str, Any] = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "tools": tools,
            "call_tool": call_tool,
            "ToolError": ToolError,
            "Blob": Blob,
            "search": search,
            "help": help,
            "show": show,
            "resources": resources,
        }
        outcome = run_snippet(code, namespace, defer, check_calls)
        _show_last_value(outcome)
        error = None
        if outcome.error is not None:
            limit = options["max_value_bytes"]
            error = {
                "type": type(outcome.error).__name__,
                "message": _cut_middle(_message(outcome.error), limit, "the error message"),
                "traceback": _cut_middle(outcome.traceback, limit, "the traceback"),
            }
        return boundary_json(
            {
                **_stream_fields("stdout", out, options["max_stdout_bytes"]),
                **_stream_fields("stderr", err, options["max_stderr_bytes"]),
                **_value_fields(outcome, options["max_value_bytes"]),
                "error": error,
            }
        )


# Snippets run at build time, each a few times: enough for the interpreter to specialize the
# bytecode they pass through (it does so on a code path's second pass).
_REHEARSED = ("print(1)", "1")
_REHEARSALS = 3


def _rehearse() -> None:
    """Run a few snippets at build time, so that the snapshot already holds what a run's first pass
    through the guest writes: specialized bytecode, string hashes, the interpreter's type cache."""
    options = json.dumps(
        {
            "seed": "00" * 32,
            **dict.fromkeys(("max_stdout_bytes", "max_stderr_bytes", "max_value_bytes"), 1024),
        }
    )
    stdio = sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__
    for _ in range(_REHEARSALS):
        for code in _REHEARSED:
            WitWorld().run(code, options)
    sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = stdio
    linecache.cache.pop(SNIPPET_FILENAME, None)
    _capabilities.check_shared_generator_unmade()


_rehearse()
_heap.settle()  # last: whatever the build allocates after it lands in the heap's holes again
