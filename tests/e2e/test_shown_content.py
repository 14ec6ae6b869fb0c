"""Images out of the sandbox through the real gateway process: a child's screenshot reaches the client
as MCP image content, byte for byte, whichever protocol era the SDK client speaks."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import anyio
import pytest
from mcp import types
from mcp.client.client import ConnectMode

from tests.e2e.gateway_process import WAIT, full_record, sdk_client, write_config
from tests.real_servers import SCREEN_SERVER
from tests.servers.screen_server import SCREENSHOT

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_screenshot_shown_by_a_snippet_arrives_as_an_image_block(
    tmp_path: Path, mode: ConnectMode
) -> None:
    screen = {"command": sys.executable, "args": [str(SCREEN_SERVER)]}
    config = write_config(tmp_path, {"mcpServers": {"screen": screen}})
    code = (
        "shot, caption = tools.screen.screenshot(label='home')\n"
        "show(shot)\n"
        "Blob('a,b\\n1,2\\n', mime_type='text/csv')"
    )
    async with sdk_client(config, mode) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("execute_code", {"code": code})
            detailed = await client.call_tool("execute_code", {"code": code, "details": True})
    assert not result.is_error, result.content
    text, image, table = result.content
    assert isinstance(text, types.TextContent)
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == SCREENSHOT
    assert isinstance(table, types.EmbeddedResource)
    assert isinstance(table.resource, types.BlobResourceContents)
    assert base64.b64decode(table.resource.blob) == b"a,b\n1,2\n"
    assert result.structured_content is None
    assert "iVBOR" not in text.text  # the PNG's base64 is the image block alone, not text too
    shown = full_record(detailed)["shown"]
    assert [item["kind"] for item in shown] == ["image", "resource"]
    assert all("data" not in item for item in shown)  # no base64 in the full record either
