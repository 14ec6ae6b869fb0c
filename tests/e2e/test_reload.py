"""Config reload without a restart, end to end: the real gateway process, real child servers, the SDK
client in one session throughout; reloads triggered by SIGHUP, by a change to the file, and by
`codemode-gateway reload`.

One gateway (a latch child `a` and a ledger, not watching its file) serves the tests whose reloads
need no fresh start: each waits for the record of its own reload (the next after those already
written), tags its ledger entries, and after it the config is put back and reloaded, so that every
test starts from the config the module started with."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.client import ConnectMode
from mcp.client.session import IncomingMessage, MessageHandlerFnT

from tests.children.test_child import FAST_RESTART, NOT_FOUND, until_fixed
from tests.e2e.gateway_http import http_gateway
from tests.e2e.gateway_process import (
    EVERYTHING,
    WAIT,
    cli,
    environment,
    gateway_args,
    ledger_entries,
    ledger_server,
    overview_once,
    python_child,
    search_docs,
    text,
    write_config,
)
from tests.real_servers import REPO, SERVERS

pytestmark = pytest.mark.anyio

LATCH: dict[str, Any] = python_child(SERVERS / "latch_server.py")
# Where a test needs a child whose process it can tell apart (pid) or hold (wait_for), LATCH; where any
# child will do, EVERYTHING, a Node child that starts on a fraction of a Python child's CPU.
POLL_SECONDS = 0.02  # how often the audit log is read while waiting for a reload's record


def team(tmp_path: Path, servers: dict[str, Any], **sections: Any) -> Path:
    """Write the config (the audit log beside it) and return its path."""
    return write_config(
        tmp_path, {"mcpServers": servers, "audit": {"path": str(tmp_path / "audit.jsonl")}, **sections}
    )


@asynccontextmanager
async def gateway(
    config: Path,
    *options: str,
    mode: ConnectMode = "auto",
    messages: MessageHandlerFnT | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """The SDK's `Client` on `codemode-gateway serve --config CONFIG --pid-file ... OPTIONS`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=gateway_args("serve", "--config", str(config), "--pid-file", str(pid_file(config)), *options),
        env=env or environment(),
    )
    async with Client(params, mode=mode, message_handler=messages, read_timeout_seconds=WAIT) as client:
        yield client


def pid_file(config: Path) -> Path:
    return config.with_name("gateway.pid")


def sighup(config: Path) -> None:
    """SIGHUP to the gateway serving `config`, whose pid its pid file holds."""
    os.kill(int(pid_file(config).read_text().strip()), signal.SIGHUP)


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


async def attempt_record(tmp_path: Path, attempt: int) -> dict[str, Any]:
    """The audit record of reload attempt `attempt` (every reload counts, refused ones too), once the
    gateway has written it."""
    with anyio.fail_after(WAIT):
        while True:
            records = [r for r in audit(tmp_path) if r["kind"] == "reload" and r["attempt"] == attempt]
            if records:
                return records[0]
            await anyio.sleep(POLL_SECONDS)


async def execute(client: Client, code: str) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("execute_code", {"code": code, "details": True})
    assert isinstance(result.structured_content, dict), text(result)
    return result.structured_content


async def overview(client: Client) -> str:
    return await search_docs(client)


def reload_note(shown: str) -> list[str]:
    """The overview's line saying which reload applied the config in force (none before the first)."""
    return [line for line in shown.splitlines() if line.startswith("Config reloaded ")]


async def until_exists(path: Path) -> None:
    with anyio.fail_after(WAIT):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 (another process makes it)
            await anyio.sleep(POLL_SECONDS)


async def test_a_sighup_reload_that_adds_a_child_makes_its_tools_callable_in_the_same_session(
    tmp_path: Path,
) -> None:
    config = team(tmp_path, {"a": LATCH})
    async with gateway(config, "--no-watch") as client:
        before = await execute(client, "tools.a.pid()")
        assert "Config" not in await overview(client)  # the config it started with is no news
        team(tmp_path, {"a": LATCH, "b": EVERYTHING})
        sighup(config)
        record = await attempt_record(tmp_path, 1)
        added = await execute(client, "tools.b.echo(message='from b')")
        after = await execute(client, "tools.a.pid()")
        shown = await overview(client)
    assert record["trigger"] == "signal"
    assert record["outcome"] == "applied"
    assert record["servers"] == {"added": ["b"], "removed": [], "changed": []}
    assert record["sections"] == ["mcpServers"]
    assert record["restart_needed"] == []
    assert added["ok"]
    assert added["value"] == "Echo: from b"
    assert after["value"] == before["value"]  # the unchanged child kept its process
    assert "Config reloaded " in shown
    assert "(reload 1): tools may differ from earlier searches." in shown
    assert "b (ready" in shown


async def test_a_child_that_failed_for_good_before_connecting_is_started_again_by_a_reload_after_the_fix(
    tmp_path: Path,
) -> None:
    installed = tmp_path / "installed"
    config = team(tmp_path, {"tiem": until_fixed(installed)}, restart=FAST_RESTART)
    async with gateway(config, "--no-watch") as client:
        failed = await overview_once(client, "tiem (failed")
        installed.touch()  # the fix: its command now starts a server
        code, out, _ = await cli("reload", "--pid-file", str(pid_file(config)))
        ready = await overview_once(client, "tiem (ready")
        echoed = await execute(client, "tools.tiem.echo(text='fixed')")
    assert (
        "tiem (failed: exited before it connected, 3 times in a row the same way; fix its command, then "
        f"reload the config (or restart the gateway); stderr: {NOT_FOUND})"
    ) in failed
    assert code == 0
    assert out.splitlines() == ["attempt 1: unchanged", "  failed servers started again: tiem"]
    assert "tiem (ready, 3 tools)" in ready
    assert echoed["value"] == {"result": "fixed"}


async def test_a_file_change_reload_removes_a_child_and_keeps_the_others_connected(tmp_path: Path) -> None:
    config = team(tmp_path, {"a": LATCH, "b": EVERYTHING})
    async with gateway(config) as client:  # watching the file: the default
        before = await execute(client, "[tools.a.pid(), tools.b.echo(message='here')]")
        team(tmp_path, {"a": LATCH})
        record = await attempt_record(tmp_path, 1)
        gone = await execute(client, "tools.b.echo(message='gone')")
        after = await execute(client, "tools.a.pid()")
    assert record["trigger"] == "file"
    assert record["servers"] == {"added": [], "removed": ["b"], "changed": []}
    assert not gone["ok"]
    assert before["value"][1] == "Echo: here"
    assert "unknown tool 'b.echo'" in gone["error"]["message"]
    assert after["value"] == before["value"][0]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("shared")
    return team(directory, shared_servers(directory))


def shared_servers(directory: Path) -> dict[str, Any]:
    """The shared gateway's children: `a` (the latch) and the ledger."""
    return {"a": LATCH, "ledger": ledger_server(directory)}


@pytest.fixture(scope="module")
async def shared(shared_config: Path) -> AsyncIterator[Client]:
    env = environment({"PYTHONPATH": str(REPO)})  # where the gateway process imports the middleware from
    async with gateway(shared_config, "--no-watch", env=env) as client:
        yield client


def reloads(directory: Path) -> int:
    return sum(1 for r in audit(directory) if r["kind"] == "reload")


@pytest.fixture
async def next_attempt(shared: Client, shared_config: Path) -> AsyncIterator[int]:
    """The attempt number the shared gateway's next reload gets; afterwards the config is put back
    and reloaded, so the next test starts from the config the module started with."""
    directory, config = shared_config.parent, anyio.Path(shared_config)
    original = await config.read_text(encoding="utf-8")
    yield 1 + reloads(directory)
    if await config.read_text(encoding="utf-8") != original:
        await config.write_text(original, encoding="utf-8")
        number = 1 + reloads(directory)
        sighup(shared_config)
        await attempt_record(directory, number)


@pytest.fixture
def tag() -> str:
    """This test's own token: its ledger entries carry it."""
    return secrets.token_hex(6)


def entries(directory: Path, tag: str) -> list[str]:
    """What reached the shared ledger under `tag`, oldest first, without the tag."""
    return [e.removeprefix(f"{tag} ") for e in ledger_entries(directory) if e.startswith(f"{tag} ")]


async def test_the_cli_tightens_policy_mid_session_and_a_run_in_flight_finishes_under_the_old_one(
    shared: Client, shared_config: Path, next_attempt: int, tag: str, tmp_path: Path
) -> None:
    directory = shared_config.parent
    release = tmp_path / "release"
    held = (
        f"first = tools.a.wait_for(path={str(release)!r})\n"
        f"tools.ledger.append(entry='{tag} in flight')\nfirst"
    )
    results: list[dict[str, Any]] = []

    async def run_held() -> None:
        results.append(await execute(shared, held))

    code, out, err = -1, "", ""
    allowed = await execute(shared, f"tools.ledger.append(entry='{tag} before')")
    async with anyio.create_task_group() as group:
        group.start_soon(run_held)
        await until_exists(tmp_path / "release.waiting")  # the run is in flight, past its start
        team(directory, shared_servers(directory), policy={"deny": ["ledger.append"]})
        code, out, err = await cli("reload", "--pid-file", str(pid_file(shared_config)))
        release.touch()
    refused = await execute(shared, f"tools.ledger.append(entry='{tag} after')")
    record = await attempt_record(directory, next_attempt)
    assert code == 0, err
    assert out.startswith(f"attempt {next_attempt}: applied (reload {record['reload']})\n"), out
    assert "changed: policy" in out
    assert allowed["ok"]
    assert results[0]["ok"], results[0]
    assert not refused["ok"]
    assert "ledger.append is denied by policy" in refused["error"]["message"], refused["error"]
    assert entries(directory, tag) == ["before", "in flight"]
    assert record["trigger"] == "cli"
    assert isinstance(record["requested_by"]["pid"], int)
    assert record["sections"] == ["policy"]


async def test_an_invalid_config_is_refused_the_old_one_serves_on_and_the_audit_says_so(
    shared: Client, shared_config: Path, next_attempt: int
) -> None:
    directory = shared_config.parent
    servers = shared_servers(directory)
    before = reload_note(await overview(shared))
    team(directory, servers, startup_timeout_seconds=-1, policy={"deny": ["nowhere.tool"]})
    code, out, _ = await cli("reload", "--pid-file", str(pid_file(shared_config)))
    still = await execute(shared, "tools.a.echo(text='still here')")
    after = reload_note(await overview(shared))
    assert code == 1
    assert f"attempt {next_attempt}: refused\n" in out
    assert "startup_timeout_seconds" in out
    assert "nowhere" in out
    assert still["ok"]
    assert still["value"] == {"result": "still here"}
    assert after == before  # the overview counts only the reloads applied
    record = await attempt_record(directory, next_attempt)
    assert record["reload"] is None
    assert record["outcome"] == "refused"
    assert record["ok"] is False
    assert any("startup_timeout_seconds" in error for error in record["errors"])


async def test_a_policy_rule_that_would_match_no_tool_of_a_ready_child_refuses_the_reload(
    shared: Client, shared_config: Path, next_attempt: int
) -> None:
    directory = shared_config.parent
    await execute(shared, "tools.a.echo(text='ready')")
    team(directory, shared_servers(directory), policy={"deny": ["a.ecko"]})
    sighup(shared_config)
    record = await attempt_record(directory, next_attempt)
    still = await execute(shared, "tools.a.echo(text='still callable')")
    assert record["outcome"] == "refused"
    assert any("a.ecko" in error and "a.echo" in error for error in record["errors"]), record["errors"]
    assert still["ok"]


async def test_clients_are_told_when_a_reload_changes_the_exposed_tools(
    shared: Client, shared_config: Path, next_attempt: int
) -> None:
    # 2026-07-28: change notifications come on a stream the client opens
    directory = shared_config.parent
    with anyio.fail_after(WAIT):
        before = [tool.name for tool in (await shared.list_tools()).tools]
    team(directory, shared_servers(directory), expose=["a.echo"])
    async with shared.listen(tools_list_changed=True) as changes:
        sighup(shared_config)
        with anyio.fail_after(WAIT):
            await changes.__anext__()
    with anyio.fail_after(WAIT):
        after = [tool.name for tool in (await shared.list_tools()).tools]
        echoed = await shared.call_tool("a__echo", {"text": "direct"})
    record = await attempt_record(directory, next_attempt)
    assert record["sections"] == ["expose"]
    assert before == ["search_docs", "execute_code"]
    assert after == ["search_docs", "execute_code", "a__echo"]
    assert text(echoed) == "direct"


async def test_clients_of_the_handshake_era_are_told_when_a_reload_changes_the_exposed_tools(
    tmp_path: Path,
) -> None:
    config = team(tmp_path, {"a": EVERYTHING})
    told = anyio.Event()

    async def messages(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    async with gateway(config, "--no-watch", mode="legacy", messages=messages) as client:
        with anyio.fail_after(WAIT):
            before = [tool.name for tool in (await client.list_tools()).tools]
        team(tmp_path, {"a": EVERYTHING}, expose=["a.echo"])
        sighup(config)
        with anyio.fail_after(WAIT):
            await told.wait()
            after = [tool.name for tool in (await client.list_tools()).tools]
            echoed = await client.call_tool("a__echo", {"message": "direct"})
    assert before == ["search_docs", "execute_code"]
    assert after == ["search_docs", "execute_code", "a__echo"]
    assert text(echoed) == "Echo: direct"


async def test_over_http_a_changed_listener_is_reported_as_needing_a_restart_while_the_rest_applies(
    tmp_path: Path,
) -> None:
    config = team(tmp_path, {"a": EVERYTHING}, http={"max_sessions": 50})
    async with http_gateway(config) as served:
        team(tmp_path, {"a": EVERYTHING}, http={"max_sessions": 60}, policy={"deny": ["a.echo"]})
        served.process.send_signal(signal.SIGHUP)  # the listener's settings: an operator's change
        record = await attempt_record(tmp_path, 1)
        with anyio.fail_after(WAIT):
            await served.logged("config changes that apply only after a restart")
    assert record["trigger"] == "signal"
    assert record["outcome"] == "applied"
    assert record["sections"] == ["policy", "http"]
    assert record["restart_needed"] == ["http"]


async def test_new_sandbox_limits_apply_to_new_executions_while_one_in_flight_keeps_the_old(
    shared: Client, shared_config: Path, next_attempt: int, tmp_path: Path
) -> None:
    directory = shared_config.parent
    release = tmp_path / "release"
    held = f"tools.a.wait_for(path={str(release)!r})\ntools.a.echo(text='second call')"
    results: list[dict[str, Any]] = []

    async def run_held() -> None:
        results.append(await execute(shared, held))

    record: dict[str, Any] = {}
    async with anyio.create_task_group() as group:
        group.start_soon(run_held)
        await until_exists(tmp_path / "release.waiting")
        team(directory, shared_servers(directory), sandbox={"max_tool_calls": 1})
        sighup(shared_config)
        record = await attempt_record(directory, next_attempt)
        release.touch()
    capped = await execute(shared, "tools.a.echo(text='one')\ntools.a.echo(text='two')")
    assert record["outcome"] == "applied"
    assert record["sections"] == ["sandbox"]
    assert record["restart_needed"] == []
    assert results[0]["ok"], results[0]
    assert results[0]["value"] == {"result": "second call"}
    assert not capped["ok"]
    assert "max_tool_calls" in capped["error"]["message"], capped["error"]


async def test_a_reload_that_adds_middleware_wraps_the_calls_of_new_executions(
    shared: Client, shared_config: Path, next_attempt: int, tag: str
) -> None:
    directory = shared_config.parent
    await execute(shared, f"tools.ledger.append(entry='{tag} before')")
    middleware = ["tests.middleware.team_hooks:rewrite_entries"]
    team(directory, shared_servers(directory), middleware=middleware)
    sighup(shared_config)
    record = await attempt_record(directory, next_attempt)
    await execute(shared, f"tools.ledger.append(entry='{tag} after')")
    assert record["sections"] == ["middleware"]
    assert record["restart_needed"] == []
    assert entries(directory, tag) == ["before", "after (via gateway)"]
