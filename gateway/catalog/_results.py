"""A child's CallToolResult, or a resource's contents, as the Python value a snippet receives.

`structuredContent` when the child gives it; else each content block as a value (text parsed as
JSON when it is JSON, else the text); one block is the value itself, several are a list.
Images, audio and binary resources become blob markers that the guest turns into small `Blob`
objects (mime type, size, `.data`): their base64 never lands in output unless asked for.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp import types

from gateway.errors import ToolCallError
from gateway.shared import MAX_JSON_DEPTH, nesting_depth
from guest._blob import BLOB_MARKER

__all__ = ["resource_contents_value", "tool_result_value"]


def _blob(kind: str, mime_type: str | None, data: str, **extra: Any) -> dict[str, Any]:
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        size = -1
    return {BLOB_MARKER: True, "kind": kind, "mime_type": mime_type, "size": size, "data": data, **extra}


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _text_value(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null") or _is_number(stripped):
        try:
            # Python's json also reads NaN, Infinity and -Infinity, which JSON has not: such text stays text.
            value = json.loads(stripped, parse_constant=_not_json)
        except (ValueError, RecursionError):
            return text
        # Nested past what crosses into the sandbox (the redactor and the encoder recurse on it too):
        # the child's text stays text, which the snippet can still take apart itself.
        brackets = stripped.count("[") + stripped.count("{")  # at C speed: most answers stop here
        if brackets > MAX_JSON_DEPTH and nesting_depth(value) > MAX_JSON_DEPTH:
            return text
        return value
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _block_value(block: types.ContentBlock) -> Any:
    if isinstance(block, types.TextContent):
        return _text_value(block.text)
    if isinstance(block, types.ImageContent):
        return _blob("image", block.mime_type, block.data)
    if isinstance(block, types.AudioContent):
        return _blob("audio", block.mime_type, block.data)
    if isinstance(block, types.EmbeddedResource):
        value = resource_contents_value(block.resource)
        return (
            {"type": "resource", **value} if isinstance(block.resource, types.TextResourceContents) else value
        )
    link = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {key: value for key, value in link.items() if key not in ("_meta", "annotations", "icons")}


def resource_contents_value(
    contents: types.TextResourceContents | types.BlobResourceContents,
) -> dict[str, Any]:
    """A resource's contents as the snippet receives them: text as {"uri", "mime_type", "text"}, bytes as
    a blob marker of kind "resource" (embedded in a tool result, or read with resources.<server>.read)."""
    if isinstance(contents, types.TextResourceContents):
        return {"uri": str(contents.uri), "mime_type": contents.mime_type, "text": contents.text}
    return _blob("resource", contents.mime_type, contents.blob, uri=str(contents.uri))


def _error_text(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(texts).strip() or "the tool reported an error without a message"


def tool_result_value(result: types.CallToolResult) -> Any:
    """The Python value of a tool result; `isError` raises ToolCallError with the child's message."""
    if result.is_error:
        raise ToolCallError(_error_text(result))
    if result.structured_content is not None:
        return result.structured_content
    values = [_block_value(block) for block in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values
