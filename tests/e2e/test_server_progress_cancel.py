"""Progress and cancellation of execute_code, through the real gateway process over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def gateway(tmp_path: Path) -> AsyncIterator[ClientSession]:
    config = {
        "mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}},
        # One slot and a long budget: a snippet that kept running after a cancel would block the next one.
        "sandbox": {"max_concurrent_executions": 1, "timeout_seconds": 600, "fuel": 10**14},
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(path)]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(60):
            await session.initialize()
        yield session


async def test_execute_code_reports_progress_after_each_tool_call(tmp_path: Path) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    code = "for _ in range(3):\n    tools.time.get_current_time(timezone='UTC')\n'done'"
    async with gateway(tmp_path) as session:
        with anyio.fail_after(60):
            result = await session.call_tool("execute_code", {"code": code}, progress_callback=on_progress)
    assert not result.is_error
    counts = [progress for progress, _ in seen]
    assert counts[:3] == [1, 2, 3]
    assert all(message and "tool call" in message for _, message in seen)


async def test_cancelling_a_running_execution_stops_it_and_the_gateway_serves_the_next(
    tmp_path: Path,
) -> None:
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    spin = "tools.time.get_current_time(timezone='UTC')\nwhile True:\n    pass"
    async with gateway(tmp_path) as session:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await session.call_tool("execute_code", {"code": spin}, progress_callback=on_progress)

                tg.start_soon(call)
                await running.wait()  # the snippet is past its tool call, spinning
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            result = await session.call_tool("execute_code", {"code": "'next'"})
    assert result.structured_content is not None
    assert result.structured_content["value"] == "next"
