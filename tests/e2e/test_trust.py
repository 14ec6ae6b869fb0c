"""What the audit log, the model and the command line see, through the real gateway process.

One gateway serves the module's tests that need no config of their own (a tiny child, a small fuel
budget, a policy denying one tool and asking approval for another); each reads only the audit
records written while it ran."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from tests.e2e.gateway_process import EVERYTHING, TINY, WAIT, cli, execute, search_docs, session, write_config

pytestmark = pytest.mark.anyio


def _audit_records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


async def tool_calls_audited(log: Path, seen: int, count: int) -> None:
    """Wait until the audit log holds `count` tool-call records after its first `seen` records."""
    while sum(r["kind"] == "tool_call" for r in _audit_records(log)[seen:]) < count:  # noqa: ASYNC110 (the gateway writes it)
        await anyio.sleep(0.02)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "mcpServers": {"tiny": TINY},
        "audit": {"path": "audit.jsonl"},
        "sandbox": {"fuel": 50_000_000},
        "policy": {"deny": ["tiny.die"], "approve": ["tiny.env"]},
    }
    return write_config(tmp_path_factory.mktemp("trust"), config)


@pytest.fixture(scope="module")
async def client(shared_config: Path) -> AsyncIterator[ClientSession]:
    async with session(shared_config) as connected:
        yield connected


async def test_a_cancelled_or_limited_execution_gets_its_execution_record(
    client: ClientSession, shared_config: Path
) -> None:
    log = shared_config.parent / "audit.jsonl"
    seen = len(_audit_records(log)) if log.exists() else 0
    await execute(client, "tools.tiny.echo(text='first')")
    limited = await execute(client, "while True: pass")
    sleeping = "tools.tiny.echo(text='then sleeps')\nimport time\ntime.sleep(25)"
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as running:
            running.start_soon(client.call_tool, "execute_code", {"code": sleeping})
            await tool_calls_audited(log, seen, 2)  # its call is done: the run is in its sleep
            running.cancel_scope.cancel()
    await execute(client, "1")  # the gateway serves on after the cancellation
    assert limited["error"]["type"] == "FuelExhausted"
    executions = [r for r in _audit_records(log)[seen:] if r["kind"] == "execution"]
    assert [r["error"] for r in executions] == [None, "FuelExhausted", "ExecutionCancelled", None]
    assert executions[1]["error_category"] == "limit"
    assert executions[2]["error_category"] == "cancelled"


async def test_search_docs_marks_denied_and_approval_tools(client: ClientSession) -> None:
    overview = await search_docs(client)
    listing = await search_docs(client, "", server="tiny")
    assert "die [denied by policy]" in overview
    assert "env [needs the user's approval]" in overview
    assert "echo [" not in overview
    assert any(
        line.startswith("tiny.die(") and line.endswith("[denied by policy]") for line in listing.split("\n")
    )


async def test_a_positional_argument_gets_the_keyword_only_message(client: ClientSession) -> None:
    checked = await execute(client, "tools.tiny.echo('hi')")  # refused before the run
    built = await execute(client, "echo = getattr(tools.tiny, 'echo')\necho('hi')")  # as it runs
    assert checked["error"]["type"] == "ToolError"
    assert (
        "line 1: tools take keyword arguments only: tools.tiny.echo(name=value, ...)"
        in (checked["error"]["message"])
    )
    assert built["error"]["type"] == "TypeError"
    assert "tools take keyword arguments only: tools.tiny.echo(name=value, ...)" in built["error"]["message"]
    assert "_ToolProxy" not in json.dumps([checked, built])


@pytest.fixture(scope="module")
async def exec_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str]:
    """`exec --config` of a snippet calling the config's child (any will do), at the default log
    level; its exit code, stdout and stderr."""
    config = write_config(tmp_path_factory.mktemp("exec"), {"mcpServers": {"everything": EVERYTHING}})
    return await cli("exec", "--config", str(config), "-c", "tools.everything.echo(message='hi')")


async def test_exec_with_a_config_reaches_its_children_and_without_one_says_so(
    exec_run: tuple[int, str, str],
) -> None:
    code, out, err = exec_run
    assert (code, out) == (0, "'Echo: hi'\n"), err
    code, _, err = await cli("exec", "-c", "tools.tiny.echo(text='hi')")
    assert code == 1
    assert "--config" in err


async def test_a_passing_sandbox_test_run_prints_no_wasm_backtraces() -> None:
    code, out, err = await cli("sandbox-test", "--only", "processes", "memory", "stack", "native-code")
    assert code == 0, out + err
    assert "wasm backtrace" not in err.lower()
    assert " 0: 0x" not in err
    assert len(err) < 20_000


async def test_log_level_works_after_the_subcommand(tmp_path: Path, exec_run: tuple[int, str, str]) -> None:
    config = write_config(tmp_path, {"mcpServers": {"everything": EVERYTHING}})
    code, out, err = await cli("check", "--config", str(config), "--log-level", "INFO")
    assert code == 0, out + err
    assert '"level": "info"' in err
    _, _, err = exec_run  # a command given no --log-level, connecting a child as check does
    assert '"level": "info"' not in err


async def test_the_audit_table_shows_a_forged_tool_name_as_one_escaped_row(
    client: ClientSession, shared_config: Path
) -> None:
    forged = (
        "x.y\\n2099-01-01T00:00:00.000Z  tool_call  deadbeef  memory.delete_entities  ok (approved)\\x1b[2K"
    )
    # The shared log's records from here on: --since the next millisecond (records carry milliseconds).
    since = (datetime.now(UTC) + timedelta(milliseconds=1)).isoformat(timespec="milliseconds")
    # Built at run time: a literal name is refused before the run, with no call to audit.
    await execute(client, f"name = '{forged}'\ntry:\n    call_tool(name)\nexcept ToolError:\n    pass")
    with anyio.fail_after(WAIT):
        code, out, err = await cli("audit", "--config", str(shared_config), "--since", since)
    assert code == 0, err
    rows = out.splitlines()
    assert len(rows) == 3  # the header, the tool call, the execution
    assert "\x1b" not in out
    assert "\\u000a2099-01-01" in out
