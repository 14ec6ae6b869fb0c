"""Progress and cancellation of execute_code, through the real gateway process, on both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.gateway_process import WAIT, sdk_client, write_config
from tests.e2e.http_children import ledger_over_http

pytestmark = pytest.mark.anyio

ERAS = ["auto", "legacy"]  # 2026-07-28, and 2025-11-25


def config(tmp_path: Path, children: dict[str, Any]) -> Path:
    return write_config(
        tmp_path,
        {
            "mcpServers": children,
            # One slot and a long budget: a snippet that kept running after a cancel would block the next.
            "sandbox": {"max_concurrent_executions": 1, "timeout_seconds": 600, "fuel": 10**14},
        },
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway per protocol era serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def children(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    """The ledger server over HTTP from this process, one for both eras' gateways."""
    async with ledger_over_http(tmp_path_factory.mktemp("ledger")) as served:
        yield served


@pytest.fixture(scope="module", params=ERAS)
async def client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, children: dict[str, Any]
) -> AsyncIterator[Client]:
    """The SDK client on one era, with a gateway of its own (stdio: one client per process)."""
    async with sdk_client(config(tmp_path_factory.mktemp("progress"), children), request.param) as connected:
        yield connected


class Progress:
    """What a client hears: every progress value and message, in order."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.messages: list[str | None] = []
        self.arrived = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.messages.append(message)
        self.arrived.set()


async def test_progress_strictly_increases_and_keeps_coming_during_a_long_child_call(client: Client) -> None:
    heard = Progress()
    code = "tools.ledger.entries()\ntools.ledger.slow(seconds=3.5)\n'done'"
    with anyio.fail_after(WAIT):
        result = await client.call_tool(
            "execute_code", {"code": code, "details": True}, progress_callback=heard
        )
    assert not result.is_error
    assert all(b > a for a, b in zip(heard.values, heard.values[1:], strict=False)), heard.values
    # A heartbeat at least every few seconds while the child works: clients reset their idle timeout on it.
    assert len(heard.values) >= 4, heard.values
    assert heard.values[-1] >= 3.0
    assert "2 tool calls" in (heard.messages[-1] or "")


async def test_cancelling_a_running_execution_stops_it_and_the_gateway_serves_the_next(
    client: Client,
) -> None:
    heard = Progress()
    spin = "tools.ledger.entries()\nwhile True:\n    pass"
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool(
                    "execute_code", {"code": spin, "details": True}, progress_callback=heard
                )

            tg.start_soon(call)
            await heard.arrived.wait()  # the snippet is past its tool call, spinning
            tg.cancel_scope.cancel()  # the SDK tells the server the request is cancelled
        # With one slot, this runs only if the spinning snippet was really stopped.
        result = await client.call_tool("execute_code", {"code": "'next'", "details": True})
    assert result.structured_content is not None
    assert result.structured_content["value"] == "next"
