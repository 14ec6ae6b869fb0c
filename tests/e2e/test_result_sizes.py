"""execute_code's results fit what clients keep, through the real gateway process and the SDK client.

A result is text (structured content only with `details`); Claude Code warns past 10k tokens, cuts
at 25k, moves results past 50,000 characters (or the size a tool announces) into a file and cuts
error text past about 11,000 characters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, types

from tests.e2e.gateway_process import WAIT, sdk_client, text, write_config

pytestmark = pytest.mark.anyio

# What a new user tried: 131 K characters printed, and a large value, with stderr on top.
FLOOD = (
    "import sys\nprint('x' * 131_000)\nprint('e' * 50_000, file=sys.stderr)\n{'rows': ['v' * 100] * 2_000}"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway with the default caps serves the tests that keep them."""
    return "asyncio"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """The SDK client on a gateway with the default caps, and no child: the snippets call no tool."""
    config = write_config(tmp_path_factory.mktemp("sizes"), {"mcpServers": {}})
    async with sdk_client(config) as connected:
        yield connected


async def call(client: Client, code: str) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool("execute_code", {"code": code})


async def test_a_flood_of_output_comes_back_under_claude_codes_limits_saying_where_it_was_cut(
    client: Client,
) -> None:
    result = await call(client, FLOOD)
    with anyio.fail_after(WAIT):
        [execute] = [t for t in (await client.list_tools()).tools if t.name == "execute_code"]
    assert not result.is_error
    assert result.structured_content is None
    hint = (execute.meta or {})["anthropic/maxResultSizeChars"]
    shown = text(result)
    assert len(shown) < hint < 50_000
    stdout, stderr = shown.split("\n[stderr]\n")
    assert "[stdout cut here: " in stdout
    assert "(sandbox.max_stdout_bytes). Print less" in stdout
    assert "stderr cut here" in stderr
    assert "value cut here at 8,192 bytes (sandbox.max_value_bytes)" in stderr.splitlines()[-1]


async def test_a_failed_flood_keeps_its_error_whole_within_claude_codes_error_limit(client: Client) -> None:
    result = await call(client, "print('x' * 131_000)\n1/0")
    assert result.is_error
    shown = text(result)
    assert len(shown) <= 10_000
    assert shown.endswith("ZeroDivisionError: division by zero")
    assert "characters of stdout cut here" in shown


async def test_raising_the_caps_raises_the_size_the_gateway_announces(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {}, "sandbox": {"max_stdout_bytes": 200_000}})
    async with sdk_client(config) as client:
        result = await call(client, "print('x' * 131_000)")
        with anyio.fail_after(WAIT):
            [execute] = [t for t in (await client.list_tools()).tools if t.name == "execute_code"]
    hint = (execute.meta or {})["anthropic/maxResultSizeChars"]
    assert text(result) == "x" * 131_000
    assert len(text(result)) < hint
