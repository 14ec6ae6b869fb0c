"""Child faults against the pool: each one is contained, reported, and the next call succeeds.

The children are real processes (tests/servers/fault_server.py, flag-driven); reconnect delays are
shrunk through the config so that the tests wait on status changes, never on the clock.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import types
from mcp.server.mcpserver import MCPServer

from gateway import ChildUnavailable
from gateway.calls._gateway import Gateway
from gateway.children import ChildPool, ChildState, ChildStatus
from gateway.children._child import backoff_delay
from gateway.children._early_exits import EARLY_EXITS_TO_FAIL
from gateway.children.config import RestartPolicy
from gateway.config import parse_config
from tests.children.test_pool import pool_for
from tests.real_servers import FAULT_SERVER, TINY_SERVER

pytestmark = pytest.mark.anyio

Entry = dict[str, Any]


FAST_RESTART = {"initial_seconds": 0.01, "max_seconds": 0.05}
NO_RETRY_SOON = {"initial_seconds": 3600, "max_seconds": 3600}  # the first attempt stays due
WAIT = 30  # bounds a hang; every wait below ends on an event long before it
TIMEOUT = 0.3  # stands in for the host's per-call timeout


def fault(*flags: str, **extra: Any) -> Entry:
    return {"command": sys.executable, "args": [str(FAULT_SERVER), *flags], **extra}


def script(source: str, **extra: Any) -> Entry:
    """A child that is a few lines of Python: it starts in milliseconds, never speaking MCP."""
    return {"command": sys.executable, "args": ["-c", source], **extra}


EXITS = "import sys; print('missing API key', file=sys.stderr); sys.exit(3)"
EXITS_EACH_TIME_ANEW = "import os, sys; sys.exit(f'missing API key (pid {os.getpid()})')"
"""Exits at once, as EXITS does, saying something new each time: a failure that may be transient."""

NOT_FOUND = "error: mcp-server-tiem was not found in the package registry"


def until_fixed(fix: Path, **extra: Any) -> Entry:
    """A child that exits at once saying its package does not exist (as `uvx mcp-server-tiem` does),
    until the file `fix` exists: then it is the tiny server (tools echo, env, die)."""
    source = "\n".join(
        [
            "import os, runpy, sys",
            "fix, server = sys.argv[1:3]",
            "if not os.path.exists(fix):",
            f"    sys.exit({NOT_FOUND!r})",
            "sys.argv = [server]",
            "runpy.run_path(server, run_name='__main__')",
        ]
    )
    return {"command": sys.executable, "args": ["-c", source, str(fix), str(TINY_SERVER)], **extra}


def pool_of(servers: dict[str, Entry], **top: Any) -> ChildPool:
    sandbox = {"tool_call_timeout_seconds": TIMEOUT}  # what `timed_out_call` stands in for
    config = parse_config({"mcpServers": servers, "restart": FAST_RESTART, "sandbox": sandbox, **top}, "test")
    return pool_for(config)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def echo(pool: ChildPool, server: str = "fault", text: str = "hi") -> str:
    return text_of(await pool.call_tool(server, "echo", {"text": text}))


async def everything_serves(pool: ChildPool, server: str = "ok") -> bool:
    """Whether server-everything (a child that only stands for "the others", cheaper under node than
    a Python one) still answers its echo."""
    return text_of(await pool.call_tool(server, "echo", {"message": "hi"})) == "Echo: hi"


async def pids(pool: ChildPool, server: str = "fault") -> dict[str, Any]:
    result = await pool.call_tool(server, "pids", {})
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def timed_out_call(pool: ChildPool, tool: str, arguments: dict[str, Any] | None = None) -> None:
    """A call abandoned at its deadline, as the host's per-call timeout abandons it."""
    await pool.wait_ready()  # the deadline is for the call, not for the child's startup
    with anyio.move_on_after(TIMEOUT) as scope:
        await pool.call_tool("fault", tool, arguments or {})
    assert scope.cancelled_caught


async def reconnected(pool: ChildPool, name: str = "fault") -> ChildStatus:
    """Wait for the child to go down, then to be ready again."""
    await pool.wait_status(name, lambda s: s.state is not ChildState.READY)
    return await pool.wait_status(name, lambda s: s.state is ChildState.READY)


def gone(pid: int) -> bool:
    """No such process, or a zombie waiting for its (new) parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def messages(records: list[logging.LogRecord], message: str) -> list[logging.LogRecord]:
    return [r for r in records if r.getMessage() == message]


def test_the_backoff_doubles_from_the_initial_delay_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    policy = RestartPolicy(initial_seconds=0.5, max_seconds=30)
    assert [backoff_delay(policy, n, lambda: 1.0) for n in (1, 2, 3, 4, 7, 8, 500)] == [
        1.0 * 0.5,
        1.0,
        2.0,
        4.0,
        30.0,
        30.0,
        30.0,
    ]
    assert backoff_delay(policy, 3, lambda: 0.0) == 1.0  # half of the nominal 2 s


def test_a_childs_restart_keys_override_the_top_level_ones_and_idle_needs_lazy() -> None:
    config = parse_config(
        {
            "restart": {"initial_seconds": 2, "max_attempts": 9},
            "mcpServers": {"a": {**fault(), "restart": {"max_attempts": 1}}, "b": fault()},
        },
        "test",
    )
    pool = pool_for(config)
    restart = {child.name: child.restart for child in pool._children.values()}  # pyright: ignore[reportPrivateUsage]
    assert (restart["a"].initial_seconds, restart["a"].max_attempts) == (2, 1)
    assert (restart["b"].initial_seconds, restart["b"].max_attempts) == (2, 9)
    with pytest.raises(Exception, match="idle_seconds needs lazy: true"):
        parse_config({"mcpServers": {"a": {**fault(), "idle_seconds": 5}}}, "test")


async def test_a_child_killed_mid_call_fails_that_call_clearly_then_reconnects_and_serves_the_next(
    child_log: list[logging.LogRecord],
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault()}) as pool:
            assert await pool.wait_ready()
            before = await pids(pool)
            with pytest.raises(
                ChildUnavailable, match=r"^fault\.die: connection lost: closed the connection"
            ):
                await pool.call_tool("fault", "die", {})
            down = await pool.wait_status("fault", lambda s: s.state is not ChildState.READY)
            assert down.state is ChildState.RECONNECTING
            assert down.attempt == 1
            assert down.tool_count > 0  # its tools stay listed while it is down
            status = await pool.wait_status("fault", lambda s: s.state is ChildState.READY)
            assert (status.attempt, status.error) == (0, None)
            assert await echo(pool) == "hi"
            assert (await pids(pool))["pid"] != before["pid"]
            assert gone(before["pid"])
    [reconnecting] = messages(child_log, "child reconnecting")
    assert "connection lost" in getattr(reconnecting, "error", "")


async def test_calls_to_a_reconnecting_child_fail_fast_naming_the_attempt_and_the_last_error() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": script(EXITS, restart=NO_RETRY_SOON)}) as pool:
            await pool.wait_status("fault", lambda s: s.state is ChildState.RECONNECTING)
            with pytest.raises(
                ChildUnavailable,
                match=r"'fault' is reconnecting \(attempt 1\), last error: closed the connection; "
                r"stderr: missing API key",
            ):
                await pool.call_tool("fault", "echo", {"text": "x"})


async def test_a_child_that_exits_at_startup_is_retried_until_max_attempts_then_fails_for_good(
    child_log: list[logging.LogRecord], npm_server: Callable[[str], Entry]
) -> None:
    servers = {
        "fault": script(EXITS_EACH_TIME_ANEW, restart={"max_attempts": 2}),
        "ok": npm_server("@modelcontextprotocol/server-everything"),
    }
    with anyio.fail_after(WAIT):
        async with pool_of(servers) as pool:
            status = await pool.wait_status("fault", lambda s: s.state is ChildState.FAILED)
            assert await everything_serves(pool)
            with pytest.raises(ChildUnavailable, match=r"unavailable \(failed\).*gave up after 2"):
                await pool.call_tool("fault", "echo", {"text": "x"})
    assert "missing API key" in (status.error or "")
    assert (status.error or "").endswith("(gave up after 2 reconnect attempts)")
    reconnecting = [
        r for r in messages(child_log, "child reconnecting") if getattr(r, "child", "") == "fault"
    ]
    assert [getattr(r, "attempt", None) for r in reconnecting] == [1, 2]


async def test_a_child_that_exits_before_connecting_the_same_way_three_times_fails_for_good_saying_what_to_do(
    tmp_path: Path, child_log: list[logging.LogRecord]
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"tiem": until_fixed(tmp_path / "installed")}) as pool:
            status = await pool.wait_status("tiem", lambda s: s.state is ChildState.FAILED)
            with pytest.raises(ChildUnavailable) as caught:
                await pool.call_tool("tiem", "echo", {"text": "x"})
    assert status.error == (
        f"exited before it connected, {EARLY_EXITS_TO_FAIL} times in a row the same way; fix its command, "
        f"then reload the config (or restart the gateway); stderr: {NOT_FOUND}"
    )
    assert str(caught.value) == f"child server 'tiem' is unavailable (failed): {status.error}"
    reconnecting = [r for r in messages(child_log, "child reconnecting") if getattr(r, "child", "") == "tiem"]
    assert [getattr(r, "attempt", None) for r in reconnecting] == [1, 2]
    [failed] = [r for r in messages(child_log, "child failed") if getattr(r, "child", "") == "tiem"]
    assert getattr(failed, "error", "") == status.error


async def test_a_child_that_exits_before_connecting_saying_something_new_each_time_keeps_retrying() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"flaky": script(EXITS_EACH_TIME_ANEW)}) as pool:
            status = await pool.wait_status("flaky", lambda s: s.attempt > EARLY_EXITS_TO_FAIL)
    assert status.state is ChildState.RECONNECTING
    assert "missing API key (pid " in (status.error or "")


async def test_a_child_that_connected_once_keeps_reconnecting_when_it_then_exits_at_start(
    tmp_path: Path,
) -> None:
    installed = tmp_path / "installed"
    installed.touch()
    with anyio.fail_after(WAIT):
        async with pool_of({"tiem": until_fixed(installed)}) as pool:
            assert await echo(pool, "tiem") == "hi"
            installed.unlink()  # from now on each start exits at once, the same way
            with pytest.raises(ChildUnavailable, match="connection lost"):
                await pool.call_tool("tiem", "die", {})
            status = await pool.wait_status("tiem", lambda s: s.attempt > EARLY_EXITS_TO_FAIL)
    assert status.state is ChildState.RECONNECTING
    assert NOT_FOUND in (status.error or "")


async def test_a_hanging_call_is_cancelled_at_its_deadline_and_the_next_call_to_the_child_succeeds() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault(restart={"after_timeouts": 2})}) as pool:
            before = await pids(pool)
            await timed_out_call(pool, "hang")
            assert await echo(pool) == "hi"  # not wedged: the SDK dropped the abandoned request
            # The child was told (notifications/cancelled) and stopped the work.
            counted = await pool.call_tool("fault", "cancellations", {})
            assert counted.structured_content == {"result": 1}
            # An answer in between: two timeouts, but not in a row, restart nothing.
            await timed_out_call(pool, "hang")
            assert (await pids(pool))["pid"] == before["pid"]
            [status] = pool.statuses()
            assert status.state is ChildState.READY


async def test_a_child_that_stops_answering_is_restarted_after_consecutive_timeouts(
    child_log: list[logging.LogRecord],
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault(restart={"after_timeouts": 2})}) as pool:
            before = await pids(pool)
            await timed_out_call(pool, "wedge")
            await timed_out_call(pool, "echo", {"text": "anyone?"})  # the second timeout in a row
            await reconnected(pool)
            assert await echo(pool) == "hi"
            assert (await pids(pool))["pid"] != before["pid"]
            assert gone(before["pid"])  # the wedged server is reaped
    [restart] = messages(child_log, "child reconnecting")
    assert "restarted as unresponsive: 2 calls in a row timed out" in getattr(restart, "error", "")


async def test_calls_cut_short_before_the_per_call_timeout_never_count_toward_a_restart() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault(restart={"after_timeouts": 1})}) as pool:
            before = await pids(pool)
            for _ in range(3):  # each abandoned at a deadline shorter than the per-call timeout
                with anyio.move_on_after(TIMEOUT / 3) as scope:
                    await pool.call_tool("fault", "hang", {})
                assert scope.cancelled_caught
            async with anyio.create_task_group() as run:  # cancelled with its run, at no deadline
                run.start_soon(pool.call_tool, "fault", "hang", {})
                assert await echo(pool) == "hi"  # sent after the hanging call, answered meanwhile
                run.cancel_scope.cancel()
            [status] = pool.statuses()
            assert status.state is ChildState.READY
            assert (await pids(pool))["pid"] == before["pid"]
            await timed_out_call(pool, "hang")  # one that had the whole per-call timeout counts
            await reconnected(pool)
            assert (await pids(pool))["pid"] != before["pid"]


async def test_non_json_on_a_childs_stdout_is_logged_and_dropped_and_the_child_keeps_serving(
    child_log: list[logging.LogRecord],
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault("--stdout-noise", "Server started!")}) as pool:
            assert await echo(pool) == "hi"
            result = await pool.call_tool("fault", "noise", {"answer": True})
            assert text_of(result) == "answered"
            await timed_out_call(pool, "noise", {"answer": False})  # noise instead of an answer
            assert await echo(pool) == "hi"
    lines = [
        getattr(r, "line", None) for r in messages(child_log, "child wrote a message that is not MCP JSON")
    ]
    assert lines == ["Server started!", "this is not JSON", "this is not JSON"]


async def test_a_child_that_never_speaks_mcp_fails_to_start_quoting_its_stdout() -> None:
    banner = "import sys; print('hello from a banner', flush=True); sys.stdin.read()"
    entry = script(banner, startup_timeout_seconds=1, restart={"max_attempts": 0})
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": entry}) as pool:
            assert await pool.wait_ready()
            [status] = pool.statuses()
    assert status.state is ChildState.FAILED
    assert status.error == (
        "did not connect within 1 s (startup_timeout_seconds); "
        "it wrote non-MCP output to stdout: 'hello from a banner'"
    )


async def test_a_child_flooding_stderr_keeps_serving_and_the_gateway_keeps_bounded_memory(
    child_log: list[logging.LogRecord],
) -> None:
    flood = 64 * 1024 * 1024  # 4 MiB of short lines, then one line of 64 MiB
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault("--flood-stderr", str(flood))}) as pool:
            assert await echo(pool) == "hi"  # the flood did not block it on a full pipe
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert grown_mib < 32, f"the peak RSS grew by {grown_mib:.0f} MiB"
    lines = [str(getattr(r, "line", "")) for r in messages(child_log, "child stderr")]
    assert len(lines) < 1000  # rate-limited
    assert max(map(len, lines)) <= 2000
    assert messages(child_log, "child stderr lines not logged")


async def test_tools_list_changed_refreshes_the_childs_tools_and_bumps_their_version() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault()}) as pool:
            assert await pool.wait_ready()
            [before] = pool.statuses()
            await pool.call_tool("fault", "add_tool", {"name": "late_tool"})
            status = await pool.wait_status("fault", lambda s: s.tools_version > before.tools_version)
            assert status.tool_count == before.tool_count + 1
            assert "late_tool" in {tool.name for tool in pool.tools()["fault"]}
            assert text_of(await pool.call_tool("fault", "late_tool", {})) == "late_tool answers"


async def test_waiting_for_a_change_returns_at_once_for_a_stale_snapshot_else_at_the_next_change() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault()}) as pool:
            stale = pool.statuses()  # still connecting
            assert await pool.wait_ready()
            assert await pool.wait_changed(stale) == pool.statuses()
            [now] = pool.statuses()
            await pool.call_tool("fault", "add_tool", {"name": "late_tool"})
            [changed] = await pool.wait_changed([now])
            assert changed.tools_version == now.tools_version + 1


async def test_a_lazy_child_starts_on_first_use_and_stops_after_idle_seconds_keeping_its_tools() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault(lazy=True, idle_seconds=0.2)}) as pool:
            assert await pool.wait_ready()  # which does not wait for a lazy child
            [lazy] = pool.statuses()
            assert (lazy.state, lazy.tool_count) == (ChildState.IDLE, 0)
            assert "fault" not in pool.tools()
            pool.start("fault")  # what a search naming it does
            await pool.wait_status("fault", lambda s: s.state is ChildState.READY)
            first = await pids(pool)
            idle = await pool.wait_status("fault", lambda s: s.state is ChildState.IDLE)
            assert idle.tool_count > 0  # remembered: a call to one of them starts it again
            assert "echo" in {tool.name for tool in pool.tools()["fault"]}
            second = await pids(pool)  # the call starts it and waits for it
            assert second["pid"] != first["pid"]
            assert gone(first["pid"])  # stopped before the second start began


async def test_a_search_naming_a_lazy_child_starts_it_and_a_tools_change_reaches_the_catalog() -> None:
    config = parse_config({"mcpServers": {"fault": fault(lazy=True)}, "restart": FAST_RESTART}, "test")
    with anyio.fail_after(WAIT):
        async with Gateway(config) as gateway:
            overview = await gateway.search_docs()
            assert 'fault (idle, starts on first use: search_docs(server="fault") starts it' in overview
            listing = await gateway.search_docs(server="fault")
            assert listing.startswith("fault (ready, 8 tools)"), listing
            assert "fault.echo" in gateway.catalog()
            [before] = gateway.pool.statuses()
            await gateway.pool.call_tool("fault", "add_tool", {"name": "late_tool"})
            await gateway.pool.wait_status("fault", lambda s: s.tools_version > before.tools_version)
            assert "fault.late_tool" in gateway.catalog()  # rebuilt: same state, new tools version


@asynccontextmanager
async def serving(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """Serve an ASGI app on an already-listening socket until the block ends."""
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(server.serve, [sock])
        try:
            yield
        finally:
            server.should_exit = True


def listening(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(16)
    return sock


def tiny_http_app() -> Any:
    server = MCPServer("tiny")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    return server.streamable_http_app()


async def test_a_remote_child_whose_server_disappears_and_comes_back_is_reconnected(
    npm_server: Callable[[str], Entry],
) -> None:
    ok = npm_server("@modelcontextprotocol/server-everything")
    with anyio.fail_after(WAIT), listening() as first:
        port: int = first.getsockname()[1]
        remote: Entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
        async with pool_of({"remote": remote, "ok": ok}) as pool:
            async with serving(tiny_http_app(), first):
                assert await echo(pool, "remote") == "hi"
            first.close()
            with pytest.raises(ChildUnavailable):  # the first call finds the server gone
                await echo(pool, "remote")
            down = await pool.wait_status("remote", lambda s: s.state is ChildState.RECONNECTING)
            assert down.tool_count == 1
            assert await everything_serves(pool)  # the others keep serving
            # Down, it keeps being retried (and failing to connect) with backoff.
            await pool.wait_status("remote", lambda s: (s.error or "").startswith("cannot reach"))
            with pytest.raises(
                ChildUnavailable, match=r"is reconnecting \(attempt \d+\), last error: cannot reach"
            ):
                await echo(pool, "remote")
            with listening(port) as second:
                async with serving(tiny_http_app(), second):
                    await pool.wait_status("remote", lambda s: s.state is ChildState.READY)
                    assert await echo(pool, "remote") == "hi"


async def test_a_remote_child_restarted_between_calls_gets_a_new_session() -> None:
    with anyio.fail_after(WAIT), listening() as first:
        port: int = first.getsockname()[1]
        async with pool_of({"remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}) as pool:
            async with serving(tiny_http_app(), first):
                assert await echo(pool, "remote") == "hi"
            with listening(port) as second:
                async with serving(tiny_http_app(), second):
                    # The new server does not know the old session (HTTP 404): that call fails,
                    # and the child reconnects with a new session.
                    with pytest.raises(ChildUnavailable, match=r"no longer knows the session \(HTTP 404\)"):
                        await echo(pool, "remote")
                    await pool.wait_status("remote", lambda s: s.state is ChildState.READY)
                    assert await echo(pool, "remote") == "hi"


async def test_leaving_the_pool_stops_each_childs_whole_process_group_grandchildren_included() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"fault": fault("--grandchild")}) as pool:
            started = await pids(pool)
            # The gateway starts the server itself, in a new session: the server leads the group.
            assert (started["ppid"], started["pgid"]) == (os.getpid(), started["pid"])
            assert not gone(started["grandchild"])
        # The server exits on its closed stdin; the grandchild ignores that and SIGTERM.
    assert gone(started["pid"])
    assert gone(started["grandchild"])
