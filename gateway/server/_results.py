"""execute_code's result as clients take it: each output once, within the sizes they keep.

Clients differ in what they give the model. Claude Code and VS Code give it a successful result's
`structuredContent` alone (as JSON) and an error result's text alone; other clients read the text.
So the structured content carries each output once (the value, not also its repr), the text
carries each once, and an error's text stays under the 11,000 or so characters past which Claude
Code cuts it, keeping the error itself whole before the output that led to it.
"""

from __future__ import annotations

from typing import Any

from mcp import types

from gateway.sandbox import ExecutionResult, SandboxLimits, ShownItem

__all__ = ["ERROR_TEXT_CHARS", "execution_tool_result", "max_result_chars"]

ERROR_TEXT_CHARS = 10_000
"""An error result's text, at most: Claude Code truncates error text past about 11k characters."""
_ERROR_CHARS = 6_000  # of which the traceback (or error message) may take this much
_OTHER_FIELDS_CHARS = 8_192  # a result's fields besides its three outputs, JSON-encoded


def max_result_chars(limits: SandboxLimits) -> int:
    """The largest result the output caps allow, in characters (execute_code's size hint to clients)."""
    return limits.max_stdout_bytes + limits.max_stderr_bytes + limits.max_value_bytes + _OTHER_FIELDS_CHARS


def execution_tool_result(result: ExecutionResult) -> types.CallToolResult:
    """The MCP result of one execution: text for those who read text, structured content for the rest,
    and what the snippet showed as image, audio and embedded-resource blocks (never base64 text)."""
    structured: dict[str, Any] = result.model_dump(mode="json", exclude={"value_repr"})
    text = result.summary() if result.ok else error_text(result)
    return types.CallToolResult(
        content=[types.TextContent(text=text), *map(shown_block, result.shown)],
        structured_content=structured,
        is_error=not result.ok,
    )


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
    """A failed execution's text within ERROR_TEXT_CHARS: the error first in line for room, then its
    stderr and stdout sharing the rest (each cut in the middle, saying so)."""
    error = result.error
    assert error is not None
    failure = (error.traceback or f"{error.type}: {error.message}").rstrip("\n")
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
