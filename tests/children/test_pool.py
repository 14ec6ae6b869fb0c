"""The child pool against real child servers: stdio (Python and npm), streamable HTTP and SSE."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

from gateway import ChildUnavailable, SandboxLimits, ToolCallError
from gateway.children import ChildPool, ChildState, ChildStatus
from gateway.children.config import DEFAULT_TOOL_CALL_TIMEOUT_SECONDS
from gateway.config import GatewayConfig, parse_config
from gateway.escape.probe_server import build as build_probe
from tests.real_servers import TINY_SERVER, fresh_git_repo

pytestmark = pytest.mark.anyio

Entry = dict[str, Any]
ServeAsgi = Callable[[ASGIApp], AbstractAsyncContextManager[tuple[int, list[dict[str, str]]]]]

TIME: Entry = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
# Real children start in seconds (the Python ones import a lot); this bounds a hang, not a race.
WAIT = 60
SLOW_RETRY = {"initial_seconds": 3600, "max_seconds": 3600}  # the first reconnect attempt stays due


def pool_for(config: GatewayConfig, **options: Any) -> ChildPool:
    """The pool a gateway on `config` runs: its children, startup timeout, restart policy, message cap
    and per-call timeout."""
    return ChildPool(
        config.mcp_servers,
        startup_timeout_seconds=config.startup_timeout_seconds,
        restart=config.restart,
        max_message_bytes=config.max_message_bytes,
        tool_call_timeout_seconds=config.sandbox.tool_call_timeout_seconds,
        **options,
    )


def pool_of(servers: dict[str, Entry], **top: Any) -> ChildPool:
    return pool_for(parse_config({"mcpServers": servers, **top}, "test"))


def by_name(pool: ChildPool) -> dict[str, ChildStatus]:
    return {status.name: status for status in pool.statuses()}


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one pool of the children no test stops serves the tests that only call them."""
    return "asyncio"


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh git repository with one untracked file, which no test changes."""
    return fresh_git_repo(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
async def served(shared_repo: Path) -> AsyncIterator[ChildPool]:
    """A pool, redacting SECRET, of time, git (serving `shared_repo`) and tiny (with SECRET in its tool
    docs and its instructions), shared: each test only calls them and reads what they listed."""
    tiny: Entry = {
        "command": sys.executable,
        "args": [str(TINY_SERVER)],
        "env": {
            "TINY_TOOL_NOTE": f"key={SECRET}",
            "TINY_INSTRUCTIONS": f"Call echo first.\nUse key={SECRET}.",
        },
    }
    git: Entry = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(shared_repo)],
    }
    config = parse_config({"mcpServers": {"time": TIME, "git": git, "tiny": tiny}}, "test")
    async with pool_for(config, redact=redact) as pool:
        yield pool


async def test_real_stdio_children_connect_list_their_tools_and_answer_calls(
    served: ChildPool, shared_repo: Path
) -> None:
    pool = served
    with anyio.fail_after(WAIT):
        assert await pool.wait_ready()
        statuses = by_name(pool)
        assert {statuses[name].state for name in ("time", "git")} == {ChildState.READY}
        assert all((statuses[name].startup_ms or 0) > 0 for name in ("time", "git"))
        tools = pool.tools()
        assert "get_current_time" in {tool.name for tool in tools["time"]}
        assert "git_status" in {tool.name for tool in tools["git"]}
        assert statuses["git"].tool_count == len(tools["git"])

        now = await pool.call_tool("time", "get_current_time", {"timezone": "UTC"})
        status = await pool.call_tool("git", "git_status", {"repo_path": str(shared_repo)})
    assert not now.is_error
    assert now.structured_content is not None
    assert now.structured_content["timezone"] == "UTC"
    assert "hello.txt" in text_of(status)


async def test_entering_the_pool_returns_at_once_and_a_call_waits_for_its_child_to_connect(
    npm_server: Callable[..., Entry],
) -> None:
    # Any child will do: a Node one starts for a fraction of a Python one's CPU.
    with anyio.fail_after(WAIT):
        async with pool_of({"everything": npm_server("@modelcontextprotocol/server-everything")}) as pool:
            assert [s.state for s in pool.statuses()] == [ChildState.CONNECTING]
            assert pool.tools() == {}
            result = await pool.call_tool("everything", "echo", {"message": "hi"})
            assert text_of(result) == "Echo: hi"
            assert (await pool.wait_child("everything")).state is ChildState.READY


async def test_a_child_that_cannot_start_fails_and_one_that_exits_at_once_retries_while_the_others_serve(
    child_log: list[logging.LogRecord], npm_server: Callable[..., Entry]
) -> None:
    # It says something new at each exit (its pid), as a failure that may pass does.
    exits = [sys.executable, "-c", "import os, sys; sys.exit(f'missing API key (pid {os.getpid()})')"]
    servers: dict[str, Entry] = {
        "everything": npm_server("@modelcontextprotocol/server-everything"),
        "missing": {"command": "/nonexistent/codemode-no-such-server"},
        "exits": {"command": exits[0], "args": exits[1:]},
    }
    with anyio.fail_after(WAIT):
        async with pool_of(servers) as pool:
            assert await pool.wait_ready()
            statuses = by_name(pool)
            assert statuses["everything"].state is ChildState.READY
            assert statuses["missing"].state is ChildState.FAILED
            assert "cannot start '/nonexistent/codemode-no-such-server'" in (statuses["missing"].error or "")
            # A command that exists and fails a new way each time may work next time: retried with backoff.
            assert statuses["exits"].state is ChildState.RECONNECTING
            # The child's own explanation, from its stderr, is part of the error.
            assert "missing API key" in (statuses["exits"].error or "")
            assert set(pool.tools()) == {"everything"}

            result = await pool.call_tool("everything", "echo", {"message": "hi"})
            assert text_of(result) == "Echo: hi"
            with pytest.raises(
                ChildUnavailable, match=r"is reconnecting \(attempt \d+\), last error: .*missing API"
            ):
                await pool.call_tool("exits", "anything", {})
    assert any(str(getattr(r, "line", "")).startswith("missing API key (pid ") for r in child_log)
    assert any(r.getMessage() == "child failed" and getattr(r, "child", None) == "missing" for r in child_log)


async def test_a_child_that_does_not_connect_within_its_startup_timeout_fails_naming_the_timeout() -> None:
    silent: Entry = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    servers = {"silent": {**silent, "startup_timeout_seconds": 0.5, "restart": {"max_attempts": 0}}}
    with anyio.fail_after(WAIT):
        async with pool_of(servers, startup_timeout_seconds=600) as pool:
            assert await pool.wait_ready()
            [status] = pool.statuses()
    assert status.state is ChildState.FAILED
    assert status.error == "did not connect within 0.5 s (startup_timeout_seconds)"


async def test_an_unknown_child_is_unavailable_and_names_the_configured_ones() -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({}) as pool:
            assert await pool.wait_ready()
            with pytest.raises(ChildUnavailable, match=r"no child server named 'nope' \(configured: none\)"):
                await pool.call_tool("nope", "tool", {})


async def test_a_protocol_error_from_a_child_is_a_tool_call_error_and_the_child_stays_ready(
    served: ChildPool,
) -> None:
    with anyio.fail_after(WAIT):
        # mcp-server-time answers an unknown tool with a JSON-RPC error, not an error result.
        with pytest.raises(ToolCallError, match=r"^time\.no_such_tool: Unknown tool") as caught:
            await served.call_tool("time", "no_such_tool", {})
        assert not isinstance(caught.value, ChildUnavailable)
        assert by_name(served)["time"].state is ChildState.READY
        result = await served.call_tool("time", "get_current_time", {"timezone": "UTC"})
        assert not result.is_error


async def test_a_child_that_dies_after_connecting_with_restarts_off_fails_with_the_reason(
    tiny_server: Entry,
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"tiny": {**tiny_server, "restart": {"max_attempts": 0}}}) as pool:
            assert await pool.wait_ready()
            with pytest.raises(ChildUnavailable, match="connection lost"):
                await pool.call_tool("tiny", "die", {})
            [status] = pool.statuses()
            assert status.state is ChildState.FAILED
            assert pool.tools() == {}
            with pytest.raises(ChildUnavailable, match="connection lost"):
                await pool.call_tool("tiny", "echo", {"text": "x"})


async def test_a_childs_stderr_goes_to_the_log_as_records_never_to_stdout(
    tiny_server: Entry, child_log: list[logging.LogRecord], capfd: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(WAIT):
        async with pool_of({"tiny": tiny_server}) as pool:
            assert await pool.wait_ready()
    lines = [r for r in child_log if r.getMessage() == "child stderr"]
    assert "tiny server starting" in [getattr(r, "line", None) for r in lines]
    assert all(getattr(r, "child", None) == "tiny" for r in lines)
    out, err = capfd.readouterr()
    assert "tiny server starting" not in out
    assert "tiny server starting" not in err  # forwarded through logging, not inherited raw


async def test_leaving_the_pool_while_children_still_connect_stops_them_within_the_bound_and_warns_of_nothing(
    child_log: list[logging.LogRecord],
) -> None:
    pool = pool_of({"time": TIME})
    with anyio.fail_after(WAIT):
        with anyio.CancelScope() as scope:
            async with pool:
                scope.cancel()  # the caller is cancelled while the child is still starting
                await pool.wait_ready()
    [status] = pool.statuses()
    assert status.state is ChildState.FAILED
    assert status.error == "stopped before it connected"
    # A shutdown is no failure to warn of: said at info level, as a stop.
    [stopped] = [record for record in child_log if getattr(record, "error", None) == status.error]
    assert (stopped.levelno, stopped.getMessage()) == (logging.INFO, "child stopped")


async def test_a_remote_child_over_streamable_http_connects_with_its_headers_and_answers(
    serve_asgi: ServeAsgi, tiny_mcp: MCPServer
) -> None:
    with anyio.fail_after(WAIT):
        async with serve_asgi(tiny_mcp.streamable_http_app()) as (port, seen_headers):
            remote: Entry = {
                "type": "http",
                "url": f"http://127.0.0.1:{port}/mcp",
                "headers": {"Authorization": "Bearer ${TINY_TOKEN}"},
            }
            config = parse_config({"mcpServers": {"remote": remote}}, "test", {"TINY_TOKEN": "t0k3n"})
            async with pool_for(config) as pool:
                assert await pool.wait_ready()
                [status] = pool.statuses()
                assert (status.transport, status.state) == ("http", ChildState.READY)
                result = await pool.call_tool("remote", "echo", {"text": "over http"})
    assert text_of(result) == "over http"
    assert seen_headers
    assert all(headers.get("authorization") == "Bearer t0k3n" for headers in seen_headers)


async def test_a_legacy_remote_child_over_sse_connects_and_answers(
    serve_asgi: ServeAsgi, tiny_mcp: MCPServer
) -> None:
    with anyio.fail_after(WAIT):
        async with serve_asgi(tiny_mcp.sse_app()) as (port, _):
            remote: Entry = {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"}
            async with pool_of({"legacy": remote}) as pool:
                assert await pool.wait_ready()
                [status] = pool.statuses()
                assert (status.transport, status.state, status.error) == ("sse", ChildState.READY, None)
                result = await pool.call_tool("legacy", "echo", {"text": "over sse"})
    assert text_of(result) == "over sse"


async def test_an_unreachable_remote_child_is_retried_naming_its_url(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/mcp"
    with anyio.fail_after(WAIT):
        async with pool_of({"remote": {"type": "http", "url": url}}) as pool:
            assert await pool.wait_ready()
            [status] = pool.statuses()
    assert status.state is ChildState.RECONNECTING
    assert (status.error or "").startswith(f"cannot reach {url}: ")


async def test_the_pinned_npm_servers_run_under_node_and_server_everything_answers(
    npm_server: Callable[..., Entry], tmp_path: Path
) -> None:
    memory = npm_server("@modelcontextprotocol/server-memory")
    memory["env"] = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    servers = {
        "everything": npm_server("@modelcontextprotocol/server-everything"),
        "memory": memory,
        "filesystem": npm_server("@modelcontextprotocol/server-filesystem", str(tmp_path)),
    }
    with anyio.fail_after(WAIT):
        async with pool_of(servers) as pool:
            assert await pool.wait_ready()
            assert {s.name: s.state for s in pool.statuses()} == dict.fromkeys(servers, ChildState.READY)
            assert "echo" in {tool.name for tool in pool.tools()["everything"]}
            result = await pool.call_tool("everything", "echo", {"message": "hi"})
    assert text_of(result) == "Echo: hi"


# ---- answers capped as they are read ------------------------------------------------------------

CAP = 64 * 1024
PROBE: Entry = {"command": sys.executable, "args": ["-m", "gateway.escape.probe_server"]}
CAP_NAMED = f"over the {CAP}-byte cap on a child's message (max_message_bytes)"


def remote_probe(kind: str) -> tuple[ASGIApp, str, str]:
    """The probe server as an ASGI app: the app, the entry's type and the path it serves on."""
    if kind == "http-sse":
        return build_probe().streamable_http_app(), "http", "/mcp"
    if kind == "http-json":
        return build_probe().streamable_http_app(json_response=True), "http", "/mcp"
    return build_probe().sse_app(), "sse", "/sse"


async def answers_capped(pool: ChildPool) -> None:
    """Past the cap: that call fails at once naming the cap; the child serves on, within it whole."""
    assert await pool.wait_ready()
    for size in (100_000, 10 * CAP):  # the probe answers twice this size (text and structured)
        with pytest.raises(ToolCallError, match=r"^probe\.big_answer: the child's answer is ") as caught:
            await pool.call_tool("probe", "big_answer", {"size": size})
        assert CAP_NAMED in str(caught.value)
        assert not isinstance(caught.value, ChildUnavailable)
    with pytest.raises(ToolCallError, match=re.escape(CAP_NAMED)):
        await pool.call_tool("probe", "big_error", {"size": 2 * CAP})
    within = await pool.call_tool("probe", "big_answer", {"size": CAP // 2 - 100})
    assert text_of(within) == "b" * (CAP // 2 - 100)
    assert text_of(await pool.call_tool("probe", "chatty", {"count": 3, "size": 2 * CAP})) == "done"
    status = by_name(pool)["probe"]
    assert (status.state, status.attempt, status.error) == (ChildState.READY, 0, None)


@pytest.fixture(scope="module")
async def probes() -> AsyncIterator[ChildPool]:
    """A pool whose messages are capped at CAP, of the probe server twice: `probe` under that cap, and
    `roomy` with a cap of its own (4 CAP); shared, its children stay ready whatever the tests call."""
    servers = {"probe": PROBE, "roomy": {**PROBE, "max_message_bytes": 4 * CAP}}
    async with pool_of(servers, max_message_bytes=CAP) as pool:
        yield pool


async def test_a_stdio_childs_answer_past_the_cap_fails_that_call_at_once_and_the_child_serves_on(
    child_log: list[logging.LogRecord], probes: ChildPool
) -> None:
    with anyio.fail_after(WAIT):
        await answers_capped(probes)
    dropped = [
        (getattr(r, "child", None), str(getattr(r, "detail", "")))
        for r in child_log
        if r.getMessage() == "child message dropped"
    ]
    assert len(dropped) == 3  # the notifications, each described in a warning naming the child
    assert all(
        child == "probe"
        and detail.startswith("dropped a message (notification) of ")
        and detail.endswith(f"over the {CAP}-byte cap (max_message_bytes)")
        for child, detail in dropped
    )


@pytest.mark.parametrize("kind", ["http-sse", "http-json", "sse"])
async def test_a_remote_childs_answer_past_the_cap_fails_that_call_at_once_and_the_child_serves_on(
    serve_asgi: ServeAsgi, kind: str
) -> None:
    app, entry_type, path = remote_probe(kind)
    with anyio.fail_after(WAIT):
        async with serve_asgi(app) as (port, _):
            remote: Entry = {"type": entry_type, "url": f"http://127.0.0.1:{port}{path}"}
            async with pool_of({"probe": remote}, max_message_bytes=CAP) as pool:
                await answers_capped(pool)


async def test_a_childs_own_max_message_bytes_overrides_the_top_level_one(probes: ChildPool) -> None:
    with anyio.fail_after(WAIT):
        assert await probes.wait_ready()
        answer = await probes.call_tool("roomy", "big_answer", {"size": CAP})
        assert text_of(answer) == "b" * CAP
        with pytest.raises(ToolCallError, match=re.escape(CAP_NAMED)):
            await probes.call_tool("probe", "big_answer", {"size": CAP})


def test_the_pools_default_per_call_timeout_is_the_sandboxs_default() -> None:
    assert SandboxLimits().tool_call_timeout_seconds == DEFAULT_TOOL_CALL_TIMEOUT_SECONDS


def test_the_message_cap_defaults_to_4_mib_and_is_bounded() -> None:
    assert parse_config({}, "test").max_message_bytes == 4 * 1024 * 1024
    for bad in ({"max_message_bytes": 100}, {"mcpServers": {"a": {**PROBE, "max_message_bytes": 2**31}}}):
        with pytest.raises(Exception, match="max_message_bytes"):
            parse_config(bad, "test")


# ---- error texts redacted -----------------------------------------------------------------------

SECRET = "tok-5f1e9a7c3b2d4e60"


def redact(text: str) -> str:
    return text.replace(SECRET, "[REDACTED:API_TOKEN]")


async def test_a_secret_a_failing_child_quotes_is_redacted_from_its_status_errors_and_status_logs(
    child_log: list[logging.LogRecord],
) -> None:
    failing: Entry = {
        "command": "sh",
        "args": ["-c", 'echo "auth failed for token $API_TOKEN" >&2; exit 1'],
        "env": {"API_TOKEN": SECRET},
    }
    servers = {
        "down": {**failing, "restart": {"max_attempts": 0}},
        "again": {**failing, "restart": SLOW_RETRY},
    }
    with anyio.fail_after(WAIT):
        async with pool_for(parse_config({"mcpServers": servers}, "test"), redact=redact) as pool:
            assert await pool.wait_ready()
            statuses = by_name(pool)
            errors = []
            for name in servers:
                with pytest.raises(ChildUnavailable) as caught:
                    await pool.call_tool(name, "anything", {})
                errors.append(str(caught.value))
            with pytest.raises(ChildUnavailable) as unknown:
                await pool.call_tool(f"no-{SECRET}", "anything", {})
    assert statuses["down"].state is ChildState.FAILED
    assert statuses["again"].state is ChildState.RECONNECTING
    shown = [statuses["down"].error, statuses["again"].error, *errors, str(unknown.value)]
    assert all("auth failed for token [REDACTED:API_TOKEN]" in str(text) for text in shown[:4])
    logged = [
        getattr(r, "error", "") for r in child_log if r.getMessage() in ("child failed", "child reconnecting")
    ]
    assert logged
    assert not [text for text in [*shown, *logged] if SECRET in str(text)]


async def test_a_secret_in_a_childs_protocol_error_is_redacted_from_the_tool_call_error(
    served: ChildPool,
) -> None:
    with anyio.fail_after(WAIT), pytest.raises(ToolCallError, match=r"Unknown tool") as caught:
        await served.call_tool("time", f"tool_{SECRET}", {})
    assert SECRET not in str(caught.value)
    assert "tool_[REDACTED:API_TOKEN]" in str(caught.value)


async def test_a_secret_in_a_childs_tool_docs_is_redacted_before_anyone_reads_them(served: ChildPool) -> None:
    with anyio.fail_after(WAIT):
        assert await served.wait_ready()
        lookup = next(tool for tool in served.tools()["tiny"] if tool.name == "lookup")
        assert await served.call_tool("tiny", "lookup", {"key": "k"})  # the name calls still use is kept
    assert lookup.description == "Look something up (key=[REDACTED:API_TOKEN])."
    assert lookup.input_schema["properties"]["key"]["default"] == "key=[REDACTED:API_TOKEN]"
    assert SECRET not in lookup.model_dump_json()


async def test_a_childs_instructions_are_kept_redacted_in_its_status(served: ChildPool) -> None:
    with anyio.fail_after(WAIT):
        assert await served.wait_ready()
        status = by_name(served)["tiny"]
    assert status.instructions == "Call echo first.\nUse key=[REDACTED:API_TOKEN]."
