"""The gateway core in process: real children, the real sandbox, no MCP transport in between."""

from __future__ import annotations

import sys

import anyio
import pytest

from gateway._gateway import Gateway
from gateway.config import parse_config

pytestmark = pytest.mark.anyio


async def test_a_snippet_calling_a_never_started_lazy_child_starts_it_and_gets_its_answer() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "lazy": True}
            }
        },
        "test",
    )
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            overview = await gateway.search_docs()
            assert "idle" in overview
            result = await gateway.execute_code("tools.time.get_current_time(timezone='UTC')['timezone']")
        assert result.ok, result.error
        assert result.value == "UTC"


async def test_an_unknown_tool_of_a_ready_child_is_refused_with_suggestions() -> None:
    config = parse_config(
        {"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}, "t"
    )
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            result = await gateway.execute_code("tools.time.current_time(timezone='UTC')")
        assert result.error is not None
        assert "did you mean time.get_current_time" in result.error.message
