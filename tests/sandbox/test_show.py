"""Images, audio and files out of the sandbox: show(), a Blob as the last value, Blob(data, mime_type=...)."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest

from gateway import Sandbox
from gateway.sandbox.result import ExecutionResult
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def screenshot() -> dict[str, Any]:
    """What a child's image block becomes for the snippet (catalog/_results.py's marker)."""
    data = base64.b64encode(PNG).decode()
    return {
        "__codemode_blob__": True,
        "kind": "image",
        "mime_type": "image/png",
        "size": len(PNG),
        "data": data,
    }


async def run(sandbox: Sandbox, code: str) -> ExecutionResult:
    with anyio.fail_after(30):
        return await sandbox.execute(code, tool_caller=InProcessTools({"web.screenshot": screenshot}))


async def test_a_blob_from_a_tool_as_the_last_value_is_shown_whole(sandbox: Sandbox) -> None:
    result = await run(sandbox, "tools.web.screenshot()")
    assert result.ok, result.error
    [item] = result.shown
    assert (item.kind, item.mime_type, item.size) == ("image", "image/png", len(PNG))
    assert base64.b64decode(item.data) == PNG
    assert result.value == f"<Blob image image/png, {len(PNG)} bytes>"
    assert "data" not in result.model_dump()["shown"][0]  # the bytes travel as content, not JSON


async def test_show_may_be_called_several_times_with_blobs_the_snippet_makes(sandbox: Sandbox) -> None:
    code = (
        "show(tools.web.screenshot())\n"
        "show(Blob(b'RIFF0000WAVE', mime_type='audio/wav'), Blob('a,b\\n1,2\\n', mime_type='text/csv'))\n"
        "'done'"
    )
    result = await run(sandbox, code)
    assert result.value == "done"
    assert [(item.kind, item.mime_type) for item in result.shown] == [
        ("image", "image/png"),
        ("audio", "audio/wav"),
        ("resource", "text/csv"),
    ]
    assert base64.b64decode(result.shown[2].data) == b"a,b\n1,2\n"
    assert result.shown[2].uri == "codemode://shown/3"


async def test_showing_something_that_is_not_a_blob_says_what_to_do(sandbox: Sandbox) -> None:
    result = await run(sandbox, "show('a picture')")
    assert result.error is not None
    assert result.error.type == "TypeError"
    assert "show() takes Blob objects, got str" in result.error.message


async def test_a_blob_without_a_mime_type_cannot_be_shown(sandbox: Sandbox) -> None:
    result = await run(
        sandbox, "try:\n    show(Blob(b'x'))\nexcept ToolError as e:\n    message = str(e)\nmessage"
    )
    assert result.value == "show() needs the Blob's MIME type, such as 'image/png'; got None"
    assert result.shown == []


async def test_the_count_cap_ends_the_run_naming_its_key_and_keeps_what_was_shown(sandbox: Sandbox) -> None:
    limits = sandbox.limits.model_copy(update={"max_shown_items": 2})
    with Sandbox(limits) as capped:
        result = await capped.execute("for _ in range(3):\n    show(Blob(b'x', mime_type='image/png'))")
    assert result.error is not None
    assert result.error.type == "ShownTooMany"
    assert "sandbox.max_shown_items" in result.error.message
    assert len(result.shown) == 2


async def test_the_byte_cap_ends_the_run_naming_its_key(sandbox: Sandbox) -> None:
    limits = sandbox.limits.model_copy(update={"max_shown_bytes": 1000})
    with Sandbox(limits) as capped:
        result = await capped.execute(
            "show(Blob(b'x' * 600, mime_type='image/png'))\nshow(Blob(b'x' * 600, mime_type='image/png'))"
        )
    assert result.error is not None
    assert result.error.type == "ShownTooLarge"
    assert "1,200 bytes, over the 1,000-byte cap (sandbox.max_shown_bytes)" in result.error.message
    assert len(result.shown) == 1
