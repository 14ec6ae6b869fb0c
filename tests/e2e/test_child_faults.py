"""End to end: child faults through the real gateway process over stdio, driven by the SDK client.

Each fault is followed by a request that must succeed; shutdown (stdin closed, SIGTERM) must leave
no child process behind, grandchildren included.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.children.test_child import EXITS, FAST_RESTART, NO_RETRY_SOON, fault, gone, script
from tests.e2e.gateway_process import LEXICAL_SEARCH, gateway_args

pytestmark = pytest.mark.anyio

WAIT = 60  # bounds a hang; the gateway starts in a few seconds


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def gateway(directory: Path, servers: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with a gateway process serving `servers`."""
    config = {
        "mcpServers": servers,
        "restart": FAST_RESTART,
        "sandbox": {"timeout_seconds": 20, "tool_call_timeout_seconds": 1},
        **LEXICAL_SEARCH,
    }
    config_file = directory / "gateway.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=gateway_args("--log-level", "INFO", "serve", "--config", str(config_file)),
    )
    with (directory / "gateway.log").open("w", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(WAIT):
                await session.initialize()
            yield session


@pytest.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ClientSession]:
    """One gateway for the fault tests: a misbehaving child, a healthy one, one that exits at once."""
    servers = {"fault": fault(), "ok": fault(), "broken": script(EXITS, restart=NO_RETRY_SOON)}
    async with gateway(tmp_path_factory.mktemp("faults"), servers) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def run(session: ClientSession, code: str) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        result = await session.call_tool("execute_code", {"code": code, "details": True})
    assert isinstance(result.structured_content, dict), text(result)
    return result.structured_content


async def search(session: ClientSession, **arguments: Any) -> str:
    with anyio.fail_after(WAIT):
        return text(await session.call_tool("search_docs", arguments))


async def until_ready(session: ClientSession, server: str) -> str:
    """Ask search_docs until the server is ready again: each answer is one round trip, no sleeping."""
    while f"{server} (ready" not in (listing := await search(session, server=server)):
        await anyio.lowlevel.checkpoint()
    return listing


CAUGHT = """
try:
    outcome = tools.fault.{call}
except ToolError as exc:
    outcome = "ToolError: " + str(exc)
outcome
"""


async def test_a_hung_call_times_out_as_a_tool_error_and_the_next_call_to_that_child_succeeds(
    session: ClientSession,
) -> None:
    outcome = await run(session, CAUGHT.format(call="hang()"))
    assert outcome["ok"], outcome["error"]
    assert outcome["value"] == "ToolError: fault.hang timed out after 1 s (sandbox.tool_call_timeout_seconds)"
    after = await run(session, "tools.fault.echo(text='after the hang')")
    assert after["value"] == {"result": "after the hang"}


async def test_a_child_killed_mid_call_is_a_tool_error_then_it_comes_back_while_the_others_serve(
    session: ClientSession,
) -> None:
    before = (await run(session, "tools.fault.pids()"))["value"]
    outcome = await run(session, CAUGHT.format(call="die()"))
    assert outcome["value"] == "ToolError: fault.die: connection lost: closed the connection"
    assert (await run(session, "tools.ok.echo(text='still here')"))["value"] == {"result": "still here"}
    with anyio.fail_after(WAIT):
        listing = await until_ready(session, "fault")
    assert "fault.echo" in listing or "echo(" in listing
    after = (await run(session, "tools.fault.pids()"))["value"]
    assert after["pid"] != before["pid"]
    assert (await run(session, "tools.fault.echo(text='back')"))["value"] == {"result": "back"}


async def test_non_json_on_a_childs_stdout_does_not_break_it_or_the_gateway(session: ClientSession) -> None:
    outcome = await run(session, "tools.fault.noise(answer=True)")
    assert outcome["value"] == {"result": "answered"}, outcome
    assert (await run(session, "tools.fault.echo(text='fine')"))["value"] == {"result": "fine"}


async def test_a_child_that_exits_at_startup_is_reported_with_its_stderr_and_fails_fast(
    session: ClientSession,
) -> None:
    overview = await search(session)
    assert "broken (reconnecting (attempt 1)" in overview, overview
    assert "missing API key" in overview
    outcome = await run(session, "tools.broken.anything()")
    assert outcome["error"]["type"] == "ToolError"
    assert "broken" in outcome["error"]["message"]
    assert (await run(session, "tools.ok.echo(text='served')"))["value"] == {"result": "served"}


async def until_closed(session: ClientSession) -> None:
    """Return once the gateway process has closed the connection (it exited)."""
    while True:
        try:
            await session.send_ping()
        except MCPError:
            return


# SIGINT takes the same path as SIGTERM (one receiver for both): test_stdio.py checks it in-process.
@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
async def test_shutdown_stops_every_child_process_group_grandchildren_included(
    tmp_path: Path, how: str
) -> None:
    async with gateway(tmp_path, {"fault": fault("--grandchild")}) as session:
        started = (await run(session, "tools.fault.pids()"))["value"]
        assert not gone(started["grandchild"])
        if how != "stdin closed":
            os.kill(started["gateway"], signal.Signals[how])
            with anyio.fail_after(10):
                await until_closed(session)
    log = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert any(record["msg"] == "gateway stopped" for record in records)
    if how != "stdin closed":
        assert [r.get("signal") for r in records if r["msg"] == "shutting down"] == [how]
    # The gateway (the child's parent), the child, its child.
    for pid in (started["gateway"], started["ppid"], started["pid"], started["grandchild"]):
        assert gone(pid)


def child_processes(pid: int) -> set[int]:
    """The processes `pid` started that are still running (from /proc: every thread's children)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(child) for child in (task / "children").read_text().split())
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_each_stdio_child_is_one_process_the_gateway_started_itself(session: ClientSession) -> None:
    # The module's gateway: broken exited at startup and is not retried soon, so fault and ok are all.
    with anyio.fail_after(WAIT):
        while "broken (reconnecting" not in await search(session):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    started = [(await run(session, f"tools.{name}.pids()"))["value"] for name in ("fault", "ok")]
    gateway_pid = started[0]["gateway"]
    # Nothing between the gateway and a child: it leads its own process group, the gateway's child.
    for child in started:
        assert (child["ppid"], child["pgid"], child["grandchild"]) == (gateway_pid, child["pid"], None)
    assert child_processes(gateway_pid) == {child["pid"] for child in started}
