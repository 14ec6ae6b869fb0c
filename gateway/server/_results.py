"""execute_code's result as the model reads it: what the snippet printed and its value, and nothing
that says nothing.

What clients hand the model (docs/results.md): Claude Code and Codex a result's `structuredContent`
as JSON when it has one, Cursor, VS Code and the Inspector its text. So a result carries text only:
every client shows the model the same bytes. The full record (every call, its time, the fuel) is
what `details` asks for; then the text and `structuredContent` are that record, the same in every
client. An error's text stays under the 11,000 or so characters past which Claude Code cuts it,
keeping the error itself whole before the output that led to it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp import types

from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult, ShownItem, ToolCallRecord

__all__ = ["ERROR_TEXT_CHARS", "execution_tool_result", "full_record", "max_result_chars", "model_text"]

ERROR_TEXT_CHARS = 10_000
"""An error result's text, at most: Claude Code truncates error text past about 11k characters."""
_ERROR_CHARS = 6_000  # of which the traceback (or error message) may take this much
_OTHER_FIELDS_CHARS = 8_192  # a result's fields besides its three outputs, JSON-encoded
FAILED_CALL_LINES = 5
"""Failed calls named one line each; past these, one line counts the rest."""
NO_OUTPUT = "(no output)"
# Python's position markers under a traceback's source line: they repeat what the line shows.
_CARET_LINE = re.compile(r"^[ ~^]*[~^][ ~^]*$\n?", re.MULTILINE)


def max_result_chars(limits: SandboxLimits) -> int:
    """The largest result the output caps allow, in characters (execute_code's size hint to clients)."""
    return limits.max_stdout_bytes + limits.max_stderr_bytes + limits.max_value_bytes + _OTHER_FIELDS_CHARS


def execution_tool_result(result: ExecutionResult, *, details: bool = False) -> types.CallToolResult:
    """The MCP result of one execution: its text (or, with `details`, its full record as text and
    structured content), then what the snippet showed as image, audio and embedded-resource blocks."""
    shown = [shown_block(item) for item in result.shown]
    if details:
        record = full_record(result)
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(
            content=[types.TextContent(text=text), *shown], structured_content=record, is_error=not result.ok
        )
    text = model_text(result) if result.ok else error_text(result)
    blocks: list[types.ContentBlock] = [types.TextContent(text=text)] if text or not shown else []
    return types.CallToolResult(content=[*blocks, *shown], is_error=not result.ok)


def full_record(result: ExecutionResult) -> dict[str, Any]:
    """Everything about one execution as JSON: outputs, value, error, every call, fuel and time."""
    return result.model_dump(mode="json", exclude={"value_repr"})


def model_text(result: ExecutionResult) -> str:
    """A successful execution's text: stdout, stderr under a marker, the last expression's repr (when
    there is one), and one line per failed call; empty only when the snippet showed something."""
    parts: list[str] = []
    if stdout := result.stdout.rstrip("\n"):
        parts.append(stdout)
    if stderr := result.stderr.rstrip("\n"):
        parts.append("[stderr]\n" + stderr)
    if result.value_repr is not None:
        parts.append(result.value_repr)
    parts.extend(failed_call_lines(result.tool_calls))
    if not parts:
        return "" if result.shown else NO_OUTPUT
    return "\n".join(parts)


def failed_call_lines(calls: list[ToolCallRecord], *, told: str = "") -> list[str]:
    """One short line per failed or refused call, up to FAILED_CALL_LINES, then a count of the rest.
    What `told` (the error that ended the run) already says is not said again: a call it names with
    its message gets no line, one whose message it carries only its name."""
    told = " ".join(told.split())  # as a record keeps a message: on one line
    lines = [_failed_call_line(call, told) for call in calls if not call.ok]
    lines = [line for line in lines if line]
    if len(lines) <= FAILED_CALL_LINES:
        return lines
    more = len(lines) - FAILED_CALL_LINES
    return [*lines[:FAILED_CALL_LINES], f"[{more} more failed calls: details=true lists every call]"]


def _failed_call_line(call: ToolCallRecord, told: str) -> str:
    if call.message and call.message in told:
        return "" if call.tool in told else f"[{call.tool} failed]"
    return f"[{call.tool} failed: {call.message or call.error or 'no answer'}]"


def shown_block(item: ShownItem) -> types.ContentBlock:
    """One shown item as the MCP content block its kind calls for."""
    if item.kind == "image":
        return types.ImageContent(data=item.data, mime_type=item.mime_type)
    if item.kind == "audio":
        return types.AudioContent(data=item.data, mime_type=item.mime_type)
    uri = item.uri or "codemode://shown"
    return types.EmbeddedResource(
        resource=types.BlobResourceContents(uri=uri, mime_type=item.mime_type, blob=item.data)
    )


def error_text(result: ExecutionResult) -> str:
    """A failed execution's text within ERROR_TEXT_CHARS: the error (its traceback without position
    markers) and the other failed calls first in line for room, then its stderr and stdout sharing
    the rest (each cut in the middle, saying so)."""
    error = result.error
    assert error is not None
    failure = _CARET_LINE.sub("", error.traceback) if error.traceback else f"{error.type}: {error.message}"
    failure = "\n".join([failure.rstrip("\n"), *failed_call_lines(result.tool_calls, told=error.message)])
    failure = _cut(failure, _ERROR_CHARS, "the traceback" if error.traceback else "the error message")
    outputs = [
        ("stdout", result.stdout.rstrip("\n"), ""),
        ("stderr", result.stderr.rstrip("\n"), "[stderr]\n"),
    ]
    room = ERROR_TEXT_CHARS - len(failure) - sum(len(head) + 1 for _, text, head in outputs if text)
    shares = _fair_shares([len(text) for _, text, _ in outputs], room)
    parts = [
        head + _cut(text, share, name)
        for (name, text, head), share in zip(outputs, shares, strict=True)
        if text
    ]
    return "\n".join([*parts, failure])


def _fair_shares(sizes: list[int], room: int) -> list[int]:
    """Split `room` so that small parts are kept whole and the large ones share what is left evenly."""
    shares = [0] * len(sizes)
    left, pending = max(room, 0), sorted(range(len(sizes)), key=lambda i: sizes[i])
    while pending:
        index = pending.pop(0)
        shares[index] = min(sizes[index], left // (len(pending) + 1))
        left -= shares[index]
    return shares


def _cut(text: str, size: int, what: str) -> str:
    """`text` in at most `size` characters: its start and end, with a note where the middle was cut."""
    if len(text) <= size:
        return text
    note = (
        f"\n[... {{cut:,}} characters of {what} cut here: an error result is kept under "
        f"{ERROR_TEXT_CHARS:,} characters. Print less, or catch the error and print a summary.]\n"
    )
    keep = max(size - len(note.format(cut=len(text))), 0)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    return text[:head] + note.format(cut=len(text) - keep) + text[len(text) - tail :]
