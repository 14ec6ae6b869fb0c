"""What a client hands its model from a tool result, as each client renders it (docs/results.md)."""

from __future__ import annotations

import json
from typing import Any

from mcp import types


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def text_view(result: types.CallToolResult) -> str:
    """Cursor, VS Code, the Inspector: the text blocks."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def claude_code_view(result: types.CallToolResult) -> str:
    """Claude Code 2.1.3xx: `JSON.stringify(structuredContent)` for a success that has it, else the
    text blocks."""
    if result.structured_content is not None and not result.is_error:
        return _compact(result.structured_content)
    return text_view(result)


def codex_view(result: types.CallToolResult) -> str:
    """Codex: structuredContent as JSON whenever present (errors too), else the content array as JSON
    (its own envelope around each block)."""
    if result.structured_content is not None:
        return _compact(result.structured_content)
    return _compact(
        [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    )


VIEWS = {"claude-code": claude_code_view, "text": text_view, "codex": codex_view}
"""Each client family by name, and how it renders a result."""
