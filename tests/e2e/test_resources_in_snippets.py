"""A child's resources from inside a snippet, through the real gateway process and a real child:
listed, read as text or as a Blob (which show() sends on as an image), under the team's policy.

One gateway serves the module: its policy denies the one resource (`file:///dir`) that only the test
of a denied resource reads."""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client, types

from tests.e2e.gateway_process import WAIT, environment, full_record, sdk_client, search_docs, write_config
from tests.real_servers import RESOURCE_SERVER
from tests.servers.resource_server import PIXEL_PNG

pytestmark = pytest.mark.anyio

TOKEN = "resource-token-7f3a9c21"
RES = {
    "command": sys.executable,
    "args": [str(RESOURCE_SERVER)],
    "env": {"RESOURCE_TOKEN": "${RESOURCE_TOKEN}"},
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    config = {"mcpServers": {"res": RES}, "policy": {"deny": ["res:file:///*"]}}
    env = environment({"RESOURCE_TOKEN": TOKEN})
    async with sdk_client(write_config(tmp_path_factory.mktemp("resources"), config), env=env) as connected:
        yield connected


async def execute(client: Client, code: str) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        return full_record(await client.call_tool("execute_code", {"code": code, "details": True}))


async def test_a_snippet_lists_and_reads_resources_as_text_and_blobs(client: Client) -> None:
    code = (
        "listed = resources.res.list()\n"
        "pixel = resources.res.read('image://pixel.png')\n"
        "show(pixel)\n"
        "uris = sorted(r['uri'] for r in listed['resources'])[:2]\n"
        "[uris, [t['uri_template'] for t in listed['templates']], resources.res.read('note://readme'),\n"
        " repr(pixel), resources.res.read('secret://token')]"
    )
    with anyio.fail_after(WAIT):
        result = await client.call_tool("execute_code", {"code": code, "details": True})
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    listed, templates, readme, pixel, secret = result.structured_content["value"]
    assert listed == ["broken://store", "docs://page/0"]
    assert templates == ["docs://page/{n}"]
    assert readme == "Read me first."
    assert pixel == f"<Blob resource image/png, {len(PIXEL_PNG)} bytes image://pixel.png>"
    assert TOKEN not in str(result.structured_content)
    assert secret == "token=[REDACTED:RESOURCE_TOKEN]"
    image = result.content[1]
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == PIXEL_PNG


async def test_a_denied_resource_is_a_tool_error_and_the_overview_names_the_resources(client: Client) -> None:
    overview = await search_docs(client)
    denied = await execute(
        client,
        "try:\n    resources.res.read('file:///dir')\nexcept ToolError as e:\n    message = str(e)\nmessage",
    )
    unknown = await execute(client, "resources.nope.list()")
    assert "on res: resources.<server>.list() lists them" in overview
    assert "denied" in denied["value"]
    assert "res:file:///*" in denied["value"]
    assert unknown["error"]["type"] == "ToolError"
    assert "unknown server 'nope'" in unknown["error"]["message"]
