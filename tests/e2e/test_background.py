"""Background executions through the real gateway process over HTTP, with the SDK's own client: as
MCP tasks on 2026-07-28 (the `io.modelcontextprotocol/tasks` extension), and with `background`,
`collect` and `cancel` arguments on both eras for clients without tasks.

One gateway serves the module's tests that need no config of their own (they share its ledger and
its audit log): each test tags its ledger entries with a token of its own, reads only the records of
its own snippets, and ends what it started in the background, so that the next test finds the one
slot free."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.gateway_http import HttpGateway, User, http_client, http_gateway
from tests.e2e.gateway_process import (
    WAIT,
    environment,
    full_record,
    gateway_args,
    ledger_entries,
    ledger_server,
    text,
    write_config,
)
from tests.e2e.ts_client import node
from tests.real_servers import NPM_MODULES, REPO

pytestmark = pytest.mark.anyio

ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28, and 2025-11-25

ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40
TASKS = "io.modelcontextprotocol/tasks"
TASKS_CLIENT = Path(__file__).parent / "ts_client" / "tasks_client.mjs"
READ_TIMEOUT = 2.0  # the client gives up on any one request after this: background work takes longer


def slow(tag: str) -> str:
    """A snippet that notes `TAG started` and finishes after 4 s: longer than READ_TIMEOUT."""
    return f"tools.ledger.note(entry='{tag} started')\ntools.ledger.slow(seconds=4)\n'finished'"


def held(tag: str, release: Path) -> str:
    """A snippet that notes `TAG started` and finishes once the file `release` exists (the test makes it
    when it has seen what it waits for), longer than READ_TIMEOUT if need be."""
    return (
        f"tools.ledger.note(entry='{tag} started')\ntools.ledger.wait_for(path={str(release)!r})\n'finished'"
    )


async def released(release: Path) -> None:
    """Wait until a `held` snippet is in its call, then let it finish."""
    while not await anyio.Path(f"{release}.waiting").exists():  # noqa: ASYNC110 (the ledger child makes it)
        await anyio.sleep(0.02)
    await anyio.Path(release).touch()


def forever(tag: str) -> str:
    """A snippet that notes `TAG started`, then waits 600 s in a child call before noting `TAG after`."""
    return (
        f"tools.ledger.note(entry='{tag} started')\ntools.ledger.slow(seconds=600)\n"
        f"tools.ledger.note(entry='{tag} after')"
    )


def approved(tag: str) -> str:
    """A snippet whose one call (`ledger.append`) needs the user's approval in the module's policy."""
    return f"tools.ledger.append(entry='{tag} approved')\n'appended'"


APPROVED = "tools.ledger.append(entry='approved')\n'appended'"
"""The same snippet untagged, for a gateway of a test's own."""


class TaskHandle(types.Result):
    """2026-07-28's task handle (`resultType: "task"`), as this test reads it."""

    result_type: Literal["task"] = "task"  # pyright: ignore[reportIncompatibleVariableOverride]
    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskId(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskId, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskId
    name_param = "taskId"  # SEP-2663: tasks/* carry the task id as Mcp-Name


class CancelTask(types.Request[TaskId, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskId
    name_param = "taskId"


class TaskState(types.Result):
    """A tasks/get answer: the status, and once ended the result or the error."""

    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


async def _not_resolved(handle: TaskHandle, context: ClaimContext) -> types.CallToolResult:
    raise AssertionError("these tests read the task handle themselves")


class Tasks(ClientExtension):
    """The client side of the tasks extension: declared on every request, the handle read as is."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=_not_resolved)]


def config(
    directory: Path, policy: dict[str, Any] | None = None, *, ledger: bool = True, **background: Any
) -> Path:
    """The config of a gateway with a background section; over a ledger child unless `ledger` is False
    (a test whose snippets call no tool needs no child)."""
    return write_config(
        directory,
        {
            "mcpServers": {"ledger": ledger_server(directory)} if ledger else {},
            "policy": policy or {},
            "audit": {"path": str(directory / "audit.jsonl")},
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
            # One slot: a background run that kept running after a cancel would block the next run.
            "sandbox": {"max_concurrent_executions": 1},
            "background": {"max_running": 1, "max_running_per_caller": 1, **background},
        },
    )


@asynccontextmanager
async def gateway_at(
    directory: Path, policy: dict[str, Any] | None = None, *, ledger: bool = True, **background: Any
) -> AsyncIterator[HttpGateway]:
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    async with http_gateway(config(directory, policy, ledger=ledger, **background), env=env) as gateway:
        yield gateway


@dataclass
class Served:
    """A gateway that serves several tests, and the directory of its config, ledger and audit log."""

    gateway: HttpGateway
    directory: Path


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """The module's gateway: one background run at a time, `ledger.append` needing approval."""
    directory = tmp_path_factory.mktemp("background")
    async with gateway_at(directory, {"approve": ["ledger.append"]}) as gateway:
        yield Served(gateway, directory)


@pytest.fixture(scope="module")
async def roomy(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """A gateway with room for two background runs, so that only the per-caller limit can refuse."""
    directory = tmp_path_factory.mktemp("roomy")
    async with gateway_at(directory, max_running=2) as gateway:
        yield Served(gateway, directory)


@pytest.fixture
def tag() -> str:
    """This test's own token: the ledger entries of its snippets carry it."""
    return secrets.token_hex(6)


@asynccontextmanager
async def client_of(
    gateway: HttpGateway,
    mode: ConnectMode = "auto",
    *,
    token: str = ALICE,
    tasks: bool = False,
    read_timeout: float = READ_TIMEOUT,
    **callbacks: Any,
) -> AsyncIterator[Client]:
    """The SDK's Client, each of its requests given up after `read_timeout`; with `tasks`, it declares
    the tasks extension; `callbacks` are the Client's own (`logging_callback=...`)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), headers=headers) as http,
        Client(
            streamable_http_client(gateway.url, http_client=http),
            mode=mode,
            read_timeout_seconds=read_timeout,
            extensions=[Tasks()] if tasks else None,
            **callbacks,
        ) as client,
    ):
        yield client


async def start_task(client: Client, code: str) -> TaskHandle:
    result = await client.session.call_tool(
        "execute_code", {"code": code, "background": True}, allow_claimed=True
    )
    assert isinstance(result, TaskHandle), result
    return result


async def get_task(client: Client, task_id: str) -> TaskState:
    return await client.session.send_request(GetTask(params=TaskId(task_id=task_id)), TaskState)


async def cancel_task(client: Client, task_id: str) -> TaskState:
    """tasks/cancel, and the task's state once it has ended."""
    await client.session.send_request(CancelTask(params=TaskId(task_id=task_id)), types.EmptyResult)
    return await task_until(client, task_id, ended)


async def task_until(client: Client, task_id: str, done: Callable[[TaskState], bool]) -> TaskState:
    while not done(state := await get_task(client, task_id)):  # noqa: ASYNC110 (polling is the protocol)
        await anyio.sleep(0.2)
    return state


def entries(directory: Path, tag: str) -> list[str]:
    """What reached the ledger from the snippets tagged `tag`, oldest first, without the tag."""
    return [
        entry.removeprefix(f"{tag} ") for entry in ledger_entries(directory) if entry.startswith(f"{tag} ")
    ]


async def ledger_reads(directory: Path, tag: str, wanted: list[str]) -> None:
    """Wait until the ledger child (another process) has recorded exactly `wanted` under `tag`."""
    while entries(directory, tag) != wanted:  # noqa: ASYNC110 (another process writes the file)
        await anyio.sleep(0.1)


def started_id(result: types.CallToolResult) -> str:
    """The id a `background: true` answer gives, from its text (the model reads the same)."""
    found = re.search(r'Started in the background as "([^"]+)"', text(result))
    assert found is not None, text(result)
    return found.group(1)


def ended(state: TaskState) -> bool:
    return state.status in ("completed", "failed", "cancelled")


def audit_records(directory: Path, *codes: str) -> list[dict[str, Any]]:
    """The audit records of the executions of `codes` (each test's snippets are its own), in order."""
    path = directory / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    records = [json.loads(line) for line in lines]
    digests = {hashlib.sha256(code.encode()).hexdigest() for code in codes}
    ids = {r["execution_id"] for r in records if r["kind"] == "execution" and r["script_sha256"] in digests}
    return [r for r in records if r.get("execution_id") in ids]


def executions(directory: Path, *codes: str) -> list[dict[str, Any]]:
    return [record for record in audit_records(directory, *codes) if record["kind"] == "execution"]


async def test_a_task_outlives_the_clients_request_timeout_shows_progress_and_is_collected_later(
    shared: Served, tag: str
) -> None:
    foreground, background = shared.directory / f"{tag}.foreground", shared.directory / f"{tag}.background"
    code = held(tag, background)
    async with client_of(shared.gateway, tasks=True) as client:
        with anyio.fail_after(WAIT):
            # In the foreground the same snippet outlives the client's patience.
            with pytest.raises(MCPError, match=r"[Tt]imed out"):
                await client.call_tool("execute_code", {"code": held(tag, foreground)})
            # It ends (unless the timeout's cancel ended it already), freeing the one slot.
            await anyio.Path(foreground).touch()
            handle = await start_task(client, code)
            assert handle.status == "working"
            assert handle.ttl_ms is not None
            assert handle.ttl_ms > 0
            running = await task_until(
                client, handle.task_id, lambda s: "tool call" in (s.status_message or "")
            )
            assert running.status == "working"
            assert running.status_message is not None
            assert running.status_message.startswith("running: ")
            await released(background)
            done = await task_until(client, handle.task_id, ended)
    assert done.status == "completed", done
    assert done.result is not None
    assert done.result["content"] == [{"type": "text", "text": "'finished'"}]
    assert "structuredContent" not in done.result
    assert done.result["isError"] is False
    [*_, background] = executions(shared.directory, code)
    assert background["ok"] is True
    assert background["principal"] == "alice"
    assert background["limits"]["timeout_seconds"] == 600  # background.timeout_seconds, not sandbox's


@ERAS
async def test_background_true_answers_an_id_at_once_and_a_new_session_collects_the_result(
    shared: Served, tag: str, mode: ConnectMode
) -> None:
    release = shared.directory / f"{tag}.release"
    answers: list[types.CallToolResult] = []
    with anyio.fail_after(WAIT):
        async with client_of(shared.gateway, mode) as first:
            started = await first.call_tool("execute_code", {"code": held(tag, release), "background": True})
        assert not started.is_error, text(started)
        execution_id = started_id(started)
        assert f'collect="{execution_id}"' in text(started)
        assert started.structured_content is None
        # The first client is gone (its session closed); a new one collects, waiting for the end, which
        # comes once the collect is asked (every task here waits on the gateway) and the run is in its call.
        async with client_of(shared.gateway, mode) as second, anyio.create_task_group() as collecting:

            async def collect() -> None:
                arguments = {"collect": execution_id}
                answers.append(await second.call_tool("execute_code", arguments, read_timeout_seconds=WAIT))

            collecting.start_soon(collect)
            await anyio.wait_all_tasks_blocked()
            await released(release)
    [collected] = answers
    assert not collected.is_error, text(collected)
    assert text(collected) == "'finished'"
    assert entries(shared.directory, tag) == ["started"]


async def test_cancelling_a_task_stops_its_child_call_and_frees_the_slot(shared: Served, tag: str) -> None:
    code = forever(tag)
    async with client_of(shared.gateway, tasks=True) as client:
        with anyio.fail_after(WAIT):
            handle = await start_task(client, code)
            await task_until(client, handle.task_id, lambda s: "tool call" in (s.status_message or ""))
            await ledger_reads(shared.directory, tag, ["started"])  # the snippet is in its 600 s child call
            cancelled = await cancel_task(client, handle.task_id)
            # One slot: this runs only if the cancelled snippet really stopped.
            after = await client.call_tool("execute_code", {"code": "'next'"})
    assert cancelled.status == "cancelled"
    assert text(after) == "'next'"
    assert entries(shared.directory, tag) == ["started"]  # never reached the call after the child call
    [cancelled_record] = executions(shared.directory, code)
    assert cancelled_record["error_category"] == "cancelled"
    assert cancelled_record["error"] == "ExecutionCancelled"
    assert cancelled_record["principal"] == "alice"


@ERAS
async def test_cancel_argument_stops_a_background_execution_without_tasks(
    shared: Served, tag: str, mode: ConnectMode
) -> None:
    async with client_of(shared.gateway, mode) as client:
        with anyio.fail_after(WAIT):
            started = await client.call_tool("execute_code", {"code": forever(tag), "background": True})
            execution_id = started_id(started)
            await ledger_reads(shared.directory, tag, ["started"])  # the snippet is in its 600 s child call
            stopped = await client.call_tool(
                "execute_code", {"cancel": execution_id}, read_timeout_seconds=WAIT
            )
            after = await client.call_tool("execute_code", {"code": "'next'"})
    assert "is cancelled" in text(stopped), text(stopped)
    assert text(after) == "'next'"
    assert entries(shared.directory, tag) == ["started"]


@ERAS
async def test_a_caller_past_its_background_limit_is_told_which_limit_and_what_to_do(
    roomy: Served, tag: str, mode: ConnectMode
) -> None:
    async with client_of(roomy.gateway, mode) as client:
        with anyio.fail_after(WAIT):
            first = await client.call_tool("execute_code", {"code": forever(tag), "background": True})
            assert not first.is_error, text(first)
            second = await client.call_tool("execute_code", {"code": "1", "background": True})
            # Ended here, so that the next test's caller finds its limit free.
            await client.call_tool("execute_code", {"cancel": started_id(first)}, read_timeout_seconds=WAIT)
    assert second.is_error
    assert "background.max_running_per_caller" in text(second)
    assert "collect or cancel one first" in text(second)


async def test_a_task_past_the_limit_is_refused_with_the_limit_named(shared: Served, tag: str) -> None:
    async with client_of(shared.gateway, tasks=True) as client:
        with anyio.fail_after(WAIT):
            running = await start_task(client, forever(tag))
            with pytest.raises(MCPError, match=r"background.max_running"):
                await start_task(client, "1")
            await cancel_task(client, running.task_id)  # the next test finds the one slot free


async def test_another_principal_cannot_read_or_cancel_a_task_and_unknown_ids_are_refused(
    shared: Served, tag: str
) -> None:
    async with (
        client_of(shared.gateway, tasks=True) as alice,
        client_of(shared.gateway, tasks=True, token=BOB) as bob,
    ):
        with anyio.fail_after(WAIT):
            handle = await start_task(alice, forever(tag))
            for attempt in (
                get_task(bob, handle.task_id),
                bob.session.send_request(
                    CancelTask(params=TaskId(task_id=handle.task_id)), types.EmptyResult
                ),
            ):
                with pytest.raises(MCPError, match="another caller started it") as refused:
                    await attempt
                assert refused.value.error.code == -32602
            collected = await bob.call_tool("execute_code", {"collect": handle.task_id})
            assert collected.is_error
            assert "another caller started it" in text(collected)
            with pytest.raises(MCPError, match="the id is unknown"):
                await get_task(alice, "no-such-task")
            still = await get_task(alice, handle.task_id)
            await cancel_task(alice, handle.task_id)  # the next test finds the one slot free
    assert still.status == "working"


async def test_tasks_methods_from_a_client_without_the_extension_get_missing_capability(
    shared: Served,
) -> None:
    async with client_of(shared.gateway) as client:
        with anyio.fail_after(WAIT), pytest.raises(MCPError) as refused:
            await get_task(client, "anything")
    assert refused.value.error.code == -32021


async def test_shutdown_ends_a_running_background_execution_and_the_audit_log_says_so(tmp_path: Path) -> None:
    code = forever("shut")
    async with gateway_at(tmp_path) as gateway:
        async with client_of(gateway, tasks=True) as client:
            with anyio.fail_after(WAIT):
                await start_task(client, code)
                await ledger_reads(tmp_path, "shut", ["started"])  # the snippet is in its 600 s child call
        exit_code = await gateway.stop()
    assert exit_code == 0
    [record] = executions(tmp_path, code)
    assert record["error"] == "EndedByShutdown"
    assert record["error_category"] == "cancelled"
    assert record["principal"] == "alice"
    assert "background executions ended by shutdown" in gateway.messages()


async def test_the_typescript_sdk_runs_execute_code_as_a_2025_11_25_task(tmp_path: Path) -> None:
    """The handshake era's core tasks, with the TypeScript SDK's experimental tasks client over stdio:
    the SDK's Python client cannot read a `CreateTaskResult` (it checks tools/call against
    `CallToolResult`), the TypeScript one can."""
    gateway_config = write_config(
        tmp_path,
        {"mcpServers": {"ledger": ledger_server(tmp_path)}, "audit": {"path": str(tmp_path / "audit.jsonl")}},
    )
    script = {
        "command": [sys.executable, *gateway_args("serve", "--config", str(gateway_config))],
        "env": environment(),
        "cwd": str(REPO),
        "slow": slow("ts"),
        "forever": forever("ts"),
        "timeout_ms": int(READ_TIMEOUT * 1000),
    }
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [node(), str(TASKS_CLIENT), str(NPM_MODULES)], input=json.dumps(script).encode(), check=False
        )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"stdout: {stdout}\nstderr:\n{stderr}"
    report = json.loads(stdout)
    assert report["protocolVersion"] == "2025-11-25"
    assert report["tasksCapability"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert report["taskSupport"] == "optional"
    slow_run = report["slow"]
    assert slow_run["error"] is None, slow_run
    assert slow_run["messages"][0]["type"] == "taskCreated"
    assert slow_run["messages"][-1]["type"] == "result"
    assert slow_run["result"]["content"] == [{"type": "text", "text": "'finished'"}]
    forever_run = report["forever"]
    assert forever_run["working"]["status"] == "working"
    assert forever_run["working"]["statusMessage"].startswith("running: ")
    assert forever_run["taskId"] in forever_run["listed"]
    assert forever_run["cancelled"]["status"] == "cancelled"
    assert forever_run["after"]["status"] == "cancelled"
    assert "cancelled" in report["resultOfCancelled"]
    assert "the id is unknown" in report["unknown"]
    assert entries(tmp_path, "ts") == ["started", "started"]  # the cancelled one never went on
    assert [r["error_category"] for r in executions(tmp_path, slow("ts"), forever("ts"))] == [
        None,
        "cancelled",
    ]


async def test_a_background_run_past_its_own_wall_time_ends_naming_the_background_key(tmp_path: Path) -> None:
    code = "while True:\n    pass"
    gateway_of_its_own = gateway_at(tmp_path, ledger=False, timeout_seconds=1)
    async with gateway_of_its_own as gateway, client_of(gateway, "legacy") as client:
        with anyio.fail_after(WAIT):
            started = await client.call_tool("execute_code", {"code": code, "background": True})
            execution_id = started_id(started)
            collected = await client.call_tool(
                "execute_code", {"collect": execution_id}, read_timeout_seconds=WAIT
            )
    assert collected.is_error
    assert "(background.timeout_seconds)" in text(collected), text(collected)
    assert "sandbox.timeout_seconds" not in text(collected)
    [record] = executions(tmp_path, code)
    assert record["error"] == "WallTimeExceeded"
    assert record["limits"]["timeout_seconds"] == 1


class TaskUpdate(TaskId):
    input_responses: dict[str, Any]


class UpdateTask(types.Request[TaskUpdate, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskUpdate
    name_param = "taskId"


@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_an_approval_inside_a_task_is_asked_through_its_status_and_answered_with_update(
    shared: Served, tag: str, action: str
) -> None:
    async with client_of(shared.gateway, tasks=True) as client:
        with anyio.fail_after(WAIT):
            handle = await start_task(client, approved(tag))
            asking = await task_until(client, handle.task_id, lambda s: s.status == "input_required")
            assert asking.input_requests is not None
            [(key, request)] = asking.input_requests.items()
            update = TaskUpdate(
                task_id=handle.task_id, input_responses={key: {"action": action, "content": {}}}
            )
            await client.session.send_request(UpdateTask(params=update), types.EmptyResult)
            done = await task_until(client, handle.task_id, ended)
    assert request["method"] == "elicitation/create"
    assert "ledger.append" in request["params"]["message"]
    assert asking.status_message == "waiting for the user to approve ledger.append"
    assert done.status == "completed"
    assert done.result is not None
    if action == "accept":
        assert done.result["content"] == [{"type": "text", "text": "'appended'"}]
        assert entries(shared.directory, tag) == ["approved"]
    else:
        assert done.result["isError"] is True
        assert "the user declined" in done.result["content"][0]["text"]
        assert entries(shared.directory, tag) == []


async def test_a_background_run_on_the_handshake_era_asks_over_the_session_while_it_is_connected(
    shared: Served, tag: str
) -> None:
    user = User()
    async with http_client(shared.gateway.url, "legacy", elicitation=user, token=ALICE) as client:
        with anyio.fail_after(WAIT):
            started = await client.call_tool("execute_code", {"code": approved(tag), "background": True})
            execution_id = started_id(started)
            collected = await client.call_tool("execute_code", {"collect": execution_id})
    assert not collected.is_error, text(collected)
    assert len(user.prompts) == 1
    assert "ledger.append" in user.prompts[0]
    assert entries(shared.directory, tag) == ["approved"]


async def test_a_call_needing_approval_in_the_background_is_refused_when_no_one_could_approve_it(
    shared: Served, tag: str
) -> None:
    code = f"try:\n    tools.ledger.append(entry='{tag} x')\nexcept ToolError as e:\n    print(e)\n'handled'"
    # 2026-07-28 without tasks: nothing to carry the question
    async with client_of(shared.gateway) as client:
        with anyio.fail_after(WAIT):
            started = await client.call_tool(
                "execute_code", {"code": code, "background": True, "details": True}
            )
            execution_id = started_id(started)
            done = await client.call_tool(
                "execute_code", {"collect": execution_id}, read_timeout_seconds=WAIT
            )
    assert not done.is_error, text(done)
    full = full_record(done)  # details given at the start shape the collected result
    assert full["value"] == "handled"
    assert "runs in the background and no one could approve it" in full["stdout"]
    assert [(call["tool"], call["ok"]) for call in full["tool_calls"]] == [("ledger.append", False)]
    assert entries(shared.directory, tag) == []
    [call] = [record for record in audit_records(shared.directory, code) if record["kind"] == "tool_call"]
    assert call["tool"] == "ledger.append"
    assert call["ok"] is False
