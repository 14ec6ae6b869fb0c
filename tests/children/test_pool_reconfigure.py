"""A pool told to serve other children (a config reload): each child started, stopped or replaced on
its own, the others keeping their processes; real child processes over stdio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway import ChildUnavailable
from gateway.calls._pool import child_settings
from gateway.children import ChildPool, ChildState
from gateway.config import GatewayConfig, parse_config
from tests.children.test_child import FAST_RESTART, until_fixed
from tests.children.test_pool import pool_for
from tests.e2e.gateway_process import python_child
from tests.real_servers import SERVERS

pytestmark = pytest.mark.anyio

WAIT = 60  # real children start in seconds; this bounds a hang, not a race
LATCH: dict[str, Any] = python_child(SERVERS / "latch_server.py")


def config_of(servers: dict[str, Any], **top: Any) -> GatewayConfig:
    return parse_config({"mcpServers": servers, **top}, "test", {})


async def pid_of(pool: ChildPool, name: str) -> int:
    result = await pool.call_tool(name, "pid", {})
    assert result.structured_content is not None, result
    return int(result.structured_content["result"])


async def until_exists(path: Path) -> None:
    while not await anyio.Path(path).exists():  # noqa: ASYNC110 (another process makes it)
        await anyio.sleep(0.02)


async def test_an_added_child_starts_a_removed_one_stops_and_an_unchanged_one_keeps_its_process(
    npm_server: Callable[[str], dict[str, Any]],
) -> None:
    # The removed and the added child are any child: a Node one starts for a fraction of a Python one's CPU.
    everything = npm_server("@modelcontextprotocol/server-everything")
    before = config_of({"keep": LATCH, "gone": everything})
    after = config_of({"keep": LATCH, "added": everything})
    with anyio.fail_after(WAIT):
        async with ChildPool(before.mcp_servers) as pool:
            assert await pool.wait_ready()
            kept = await pid_of(pool, "keep")
            seen = pool.statuses()
            changes = pool.reconfigure(after.mcp_servers, child_settings(after))
            assert (changes.started, changes.stopped, changes.replaced) == (["added"], ["gone"], [])
            assert [status.name for status in await pool.wait_changed(seen)] == ["keep", "added"]
            assert await pool.wait_ready()
            assert await pid_of(pool, "keep") == kept
            added = await pool.call_tool("added", "echo", {"message": "hi"})
            assert [getattr(block, "text", None) for block in added.content] == ["Echo: hi"]
            with pytest.raises(ChildUnavailable, match="no child server named 'gone'"):
                await pool.call_tool("gone", "pid", {})


async def test_a_child_whose_entry_changed_is_replaced_by_a_fresh_process() -> None:
    before = config_of({"a": LATCH})
    after = config_of({"a": {**LATCH, "env": {"LATCH_NOTE": "changed"}}})
    with anyio.fail_after(WAIT):
        async with ChildPool(before.mcp_servers) as pool:
            assert await pool.wait_ready()
            first = await pid_of(pool, "a")
            changes = pool.reconfigure(after.mcp_servers, child_settings(after))
            assert changes.replaced == ["a"]
            assert await pool.wait_ready()
            assert by_state(pool) == {"a": ChildState.READY}
            assert await pid_of(pool, "a") != first


async def test_a_call_in_flight_on_a_removed_child_finishes_on_it(
    tmp_path: Path, npm_server: Callable[[str], dict[str, Any]]
) -> None:
    stays = npm_server("@modelcontextprotocol/server-everything")  # never called: any child will do
    before = config_of({"a": LATCH, "b": stays})
    after = config_of({"b": stays})
    release = tmp_path / "release"
    answers: list[str] = []

    async def call_and_keep(pool: ChildPool) -> None:
        result = await pool.call_tool("a", "wait_for", {"path": str(release)})
        assert result.structured_content is not None, result
        answers.append(result.structured_content["result"])

    with anyio.fail_after(WAIT):
        async with ChildPool(before.mcp_servers) as pool:
            assert await pool.wait_ready()
            async with anyio.create_task_group() as group:
                group.start_soon(call_and_keep, pool)
                await until_exists(tmp_path / "release.waiting")
                assert pool.reconfigure(after.mcp_servers, child_settings(after)).stopped == ["a"]
                assert pool.names == ["b"]
                release.touch()
    assert answers == ["released"]


async def test_unchanged_children_take_new_limits_in_place() -> None:
    before = config_of({"a": LATCH})
    after = config_of({"a": LATCH}, max_concurrent_calls=2, startup_timeout_seconds=7)
    with anyio.fail_after(WAIT):
        async with ChildPool(before.mcp_servers) as pool:
            assert await pool.wait_ready()
            first = await pid_of(pool, "a")
            assert not pool.reconfigure(after.mcp_servers, child_settings(after))
            assert await pid_of(pool, "a") == first
            child = pool._children["a"]  # pyright: ignore[reportPrivateUsage]
            assert child.call_slots.total_tokens == 2
            assert child.startup_timeout == 7


async def test_a_reload_gives_a_child_that_failed_for_good_a_fresh_start(tmp_path: Path) -> None:
    installed = tmp_path / "installed"
    config = config_of({"tiem": until_fixed(installed)}, restart=FAST_RESTART)
    with anyio.fail_after(WAIT):
        async with pool_for(config) as pool:
            failed = await pool.wait_status("tiem", lambda s: s.state is ChildState.FAILED)
            assert (failed.error or "").startswith("exited before it connected, 3 times in a row")
            installed.touch()  # the fix: its command now starts a server
            changes = pool.reconfigure(config.mcp_servers, child_settings(config))
            assert (changes.started, changes.replaced, changes.restarted) == ([], [], ["tiem"])
            ready = await pool.wait_status("tiem", lambda s: s.state is ChildState.READY)
            echoed = await pool.call_tool("tiem", "echo", {"text": "fixed"})
    assert ready.error is None
    assert echoed.structured_content == {"result": "fixed"}


def by_state(pool: ChildPool) -> dict[str, ChildState]:
    return {status.name: status.state for status in pool.statuses()}
