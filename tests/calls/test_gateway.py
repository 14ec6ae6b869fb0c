"""The gateway core in process: real children, the real sandbox, no MCP transport in between."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from gateway import sandbox
from gateway.calls import Inline, InRounds, _gateway
from gateway.calls._gateway import Gateway
from gateway.catalog import docs
from gateway.catalog.docs import SearchRefused, SemanticSearch
from gateway.children import ChildState
from gateway.config import parse_config
from gateway.errors import SandboxUnavailable
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from tests.catalog.fake_embedder import FakeEmbedder
from tests.e2e.gateway_process import python_child
from tests.real_servers import TINY_SERVER, gated

pytestmark = pytest.mark.anyio


async def test_a_snippet_calling_a_never_started_lazy_child_starts_it_and_gets_its_answer(
    npm_server: Callable[[str], dict[str, Any]],
) -> None:
    # Any child will do: a Node one starts for a fraction of a Python one's CPU.
    everything = npm_server("@modelcontextprotocol/server-everything")
    config = parse_config({"mcpServers": {"everything": {**everything, "lazy": True}}}, "test")
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            overview = await gateway.search_docs()
            assert "idle" in overview
            result = await gateway.execute_code("tools.everything.echo(message='started')")
        assert result.ok, result.error
        assert result.value == "Echo: started"


async def test_a_wasm_runtime_that_cannot_be_imported_refuses_executions_naming_why_and_search_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The sandbox's face imports the runtime again, through an import that fails as a broken install's.
    monkeypatch.delattr(sandbox, "Sandbox", raising=False)
    monkeypatch.setitem(sys.modules, "gateway.sandbox._sandbox", None)
    config = parse_config({"mcpServers": {"tiny": python_child(TINY_SERVER)}}, "t")
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            for _ in range(2):
                with pytest.raises(
                    SandboxUnavailable, match=r"sandbox is unavailable: .*gateway\.sandbox\._sandbox"
                ):
                    await gateway.execute_code("print(1)")
            await gateway.pool.wait_ready()
            assert "tiny.echo" in await gateway.search_docs("echo some text back")


async def test_a_search_waiting_for_children_still_starting_answers_when_a_reload_removes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway")
    tiny = python_child(TINY_SERVER)
    time = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    settings = {"startup_timeout_seconds": 600, "search": {"semantic": "off", "wait_seconds": 600}}
    never = tmp_path / "never"  # the gated children stay starting until a reload takes them away
    servers = {"time": time, "first": gated(tiny, never), "second": gated(tiny, never)}
    answers: list[str] = []

    async def search(gateway: Gateway) -> None:
        answers.append(await gateway.search_docs("echo text unchanged"))  # no tool of time fits it

    async with Gateway(parse_config({"mcpServers": servers, **settings}, "t")) as gateway:
        with anyio.fail_after(60):
            await gateway.pool.wait_status("time", lambda status: status.state is ChildState.READY)
            async with anyio.create_task_group() as tg:
                tg.start_soon(search, gateway)
                while "a search waits for the children still starting" not in caplog.messages:  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # the log is the only sign it waits
                # Waiting for `first`, then `second`: the reload takes both away mid-wait.
                gateway.apply_config(parse_config({"mcpServers": {"time": time}, **settings}, "t"), None)
            after = await gateway.search_docs("what time is it")
    [answer] = answers
    assert "first" not in answer
    assert "second" not in answer
    assert "time.get_current_time(" in after


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway on mcp-server-time serves the tests that only call and search."""
    return "asyncio"


@pytest.fixture(scope="module")
async def time_gateway() -> AsyncIterator[Gateway]:
    """A gateway of mcp-server-time, search queries capped at 40 characters; shared, no test changes it."""
    config = parse_config(
        {
            "mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}},
            "search": {"max_query_chars": 40},
        },
        "t",
    )
    async with Gateway(config) as gateway:
        yield gateway


async def test_an_unknown_tool_of_a_ready_child_is_refused_with_suggestions(time_gateway: Gateway) -> None:
    with anyio.fail_after(60):
        result = await time_gateway.execute_code("tools.time.current_time(timezone='UTC')")
    assert result.error is not None
    assert "did you mean time.get_current_time" in result.error.message


async def test_with_semantic_search_the_model_loads_at_start_and_search_docs_ranks_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = FakeEmbedder()
    monkeypatch.setattr(_gateway, "semantic_search", lambda mode: SemanticSearch(lambda: embedder))
    config = parse_config(
        {"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}, "t"
    )
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            # The children's tools are embedded once they are listed, before any search asks.
            assert await anyio.to_thread.run_sync(embedder.embedded.wait, 60)
            answer = await gateway.search_docs("convert a time between zones")
        assert "time.convert_time" in answer
        assert any("convert time (time)" in text for text in embedder.encoded[0])
        [(query, thread)] = embedder.queries
        assert query == "convert a time between zones"
        assert thread != threading.current_thread().name


async def test_lexical_search_docs_ranks_on_a_worker_thread_never_on_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, time_gateway: Gateway
) -> None:
    threads: list[int] = []
    render = docs.render_search

    def probe(*args: object, **kwargs: object) -> str:
        threads.append(threading.get_ident())
        return render(*args, **kwargs)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(docs, "render_search", probe)
    with anyio.fail_after(60):
        await time_gateway.pool.wait_ready()  # a search answers at once, without children still starting
        answer = await time_gateway.search_docs("convert a time between zones")
    assert "time.convert_time" in answer
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


async def test_a_query_past_the_configured_cap_is_refused_naming_the_key_before_any_search(
    time_gateway: Gateway,
) -> None:
    with anyio.fail_after(60):
        with pytest.raises(SearchRefused, match=r"41 characters, over search\.max_query_chars \(40\)"):
            await time_gateway.search_docs("x" * 41)
        result = await time_gateway.execute_code("search('y' * 41)")
        assert "time.convert_time" in await time_gateway.search_docs("convert a time between zones")
    assert result.error is not None
    assert "over search.max_query_chars (40)" in result.error.message


@pytest.mark.parametrize("shown", [True, False])
async def test_observed_shapes_and_a_childs_instructions_follow_the_search_section(shown: bool) -> None:
    tiny = {
        "command": sys.executable,
        "args": [str(TINY_SERVER)],
        "env": {"TINY_PLAIN_ECHO": "1", "TINY_INSTRUCTIONS": "Echo before anything else."},
    }
    search = {} if shown else {"observed_shapes": False, "server_instructions_chars": 0}
    config = parse_config({"mcpServers": {"tiny": tiny}, "search": search}, "test")
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            result = await gateway.execute_code("tools.tiny.plain_echo(text='[1, 2]')")
            listing = await gateway.search_docs(server="tiny")
    assert result.value == [1, 2]
    line = next(line for line in listing.split("\n") if line.startswith("tiny.plain_echo("))
    if shown:
        assert line.startswith("tiny.plain_echo(*, text: str) -> list[int]  # (observed)")
        assert listing.endswith("Instructions from the tiny server:\n  Echo before anything else.")
    else:
        assert line.startswith("tiny.plain_echo(*, text: str) -> Any  # Return the text unchanged")
        assert "nstructions" not in listing


@pytest.mark.parametrize("approvals", [Inline(), InRounds()], ids=["inline", "in rounds"])
async def test_the_limits_given_for_one_execution_bound_it_inline_and_in_rounds(
    approvals: Inline | InRounds,
) -> None:
    config = parse_config({"mcpServers": {}}, "test")
    burn, prints = "sum(range(2_000_000))", "print('x' * 5000)"
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            burnt = await gateway.execute_code(burn, None, approvals, limits=SandboxLimits(fuel=10_000_000))
            printed = await gateway.execute_code(
                prints, None, approvals, limits=SandboxLimits(max_stdout_bytes=1000)
            )
            unbounded = [await gateway.execute_code(code, None, approvals) for code in (burn, prints)]
    assert isinstance(burnt, ExecutionResult)
    assert isinstance(printed, ExecutionResult)
    assert burnt.error is not None
    assert "fuel" in burnt.error.message  # the execution's own budget, not the gateway's
    assert printed.ok
    assert printed.stdout_truncated  # and its own output cap
    assert "x" * 1001 not in printed.stdout
    assert [getattr(result, "value", None) for result in unbounded] == [sum(range(2_000_000)), None]
    assert getattr(unbounded[1], "stdout", "").count("x") == 5000
