"""Serving MCP over streamable HTTP, end to end: the real `serve --http` process, real children, and
the SDK's own `Client` on both protocol eras (`mode="auto"` negotiates 2026-07-28, one request at a
time; `mode="legacy"` the handshake era, in a session); every cap attempted and refused with its
status and config key; the probes; and a shutdown that lets calls in flight finish."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from tests.e2e.gateway_http import Answers, HttpGateway, User, http_client, http_gateway
from tests.e2e.gateway_process import (
    EVERYTHING,
    WAIT,
    environment,
    ledger_entries,
    search_docs,
    text,
    write_config,
)
from tests.e2e.http_children import http_children, ledger_over_http
from tests.real_servers import FAULT_SERVER, SERVERS, built

pytestmark = pytest.mark.anyio

ERAS = (("auto", "2026-07-28"), ("legacy", "2025-11-25"))
HANDSHAKE_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


class Progress:
    """Every progress value a call reported; `arrived` once the first one did."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.arrived = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.arrived.set()


def error_body(response: httpx2.Response) -> dict[str, Any]:
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    return body["error"]


async def post(gateway: HttpGateway, body: Any = None, **headers: str) -> httpx2.Response:
    """One raw POST to the MCP endpoint (a handshake-era message unless the headers say otherwise)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with anyio.fail_after(WAIT):
        async with httpx2.AsyncClient() as raw:
            return await raw.post(gateway.url, content=content, headers=HANDSHAKE_HEADERS | headers)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that a gateway below serves every test of this module that needs no other."""
    return "asyncio"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared gateway's config and ledger."""
    return tmp_path_factory.mktemp("http")


@pytest.fixture(scope="module")
async def ledger(workdir: Path) -> AsyncIterator[dict[str, Any]]:
    """The ledger server, served over HTTP from this process (its entries in the workdir)."""
    async with ledger_over_http(workdir) as children:
        yield children


@pytest.fixture(scope="module")
async def served(workdir: Path, ledger: dict[str, Any]) -> AsyncIterator[HttpGateway]:
    """`serve --http` with everything, ledger (its appends approved) and fault (tools exposed), and a small
    number of places for executions: two in flight, one queued, one of each per caller."""
    fault = {"command": sys.executable, "args": [str(FAULT_SERVER)]}
    config = write_config(
        workdir,
        {
            "mcpServers": {"everything": EVERYTHING, **ledger, "fault": fault},
            "policy": {"approve": ["ledger.append"]},
            "expose": ["fault.add_tool", "fault.late_auto", "fault.late_legacy"],
            "sandbox": {"timeout_seconds": 120},
            "http": {
                "max_executions_in_flight": 2,
                "max_executions_queued": 1,
                "max_executions_in_flight_per_caller": 1,
                "max_executions_queued_per_caller": 1,
            },
        },
    )
    async with http_gateway(config) as gateway:
        yield gateway


async def test_both_eras_find_tools_call_children_ask_approval_hear_progress_and_list_changes_over_http(
    served: HttpGateway, workdir: Path
) -> None:
    entries = len(ledger_entries(workdir))
    for mode, era in ERAS:
        await everything_the_gateway_does(served, mode, era)
    # Each approved call reached the child once.
    assert ledger_entries(workdir)[entries:] == ["auto", "legacy"]


async def everything_the_gateway_does(gateway: HttpGateway, mode: str, era: str) -> None:
    """search_docs, a child called from a snippet, an approval, progress, an exposed tool, and the
    notification that the tool list changed, on one protocol era."""
    user, heard, told = User(), Progress(), anyio.Event()

    async def messages(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    async with http_client(gateway.url, mode, elicitation=user, messages=messages) as client:
        assert client.session.protocol_version == era
        declared = client.server_capabilities.tools
        with anyio.fail_after(WAIT):
            found = await search_docs(client, "echo")
            echoed = await client.call_tool(
                "execute_code", {"code": "tools.everything.echo(message='http')", "details": True}
            )
            approved = await client.call_tool(
                "execute_code", {"code": f"tools.ledger.append(entry='{mode}')", "details": True}
            )
            slow = await client.call_tool(
                "execute_code",
                {"code": "tools.ledger.slow(seconds=1.5)", "details": True},
                progress_callback=heard,
            )
            if mode == "auto":  # 2026-07-28: change notifications come on a stream the client opens
                async with client.listen(tools_list_changed=True) as changes:
                    await client.call_tool("fault__add_tool", {"name": f"late_{mode}"})
                    await changes.__anext__()
            else:
                await client.call_tool("fault__add_tool", {"name": f"late_{mode}"})
                await told.wait()
            late = await client.call_tool(f"fault__late_{mode}", {})
    assert declared is not None
    assert declared.list_changed is True
    assert "everything.echo" in found
    assert echoed.structured_content is not None
    assert echoed.structured_content["value"] == "Echo: http"
    assert not approved.is_error, text(approved)
    assert len(user.prompts) == 1, user.prompts
    assert "ledger.append" in user.prompts[0]
    assert slow.structured_content is not None
    assert slow.structured_content["ok"]
    assert len(heard.values) >= 2
    assert all(b > a for a, b in zip(heard.values, heard.values[1:], strict=False)), heard.values
    assert text(late) == f"late_{mode} answers"


@dataclass
class Starting:
    """A gateway whose one child (everything) starts only once the probes have seen it starting."""

    gateway: HttpGateway
    alive: httpx2.Response  # /healthz at once
    starting: httpx2.Response  # /readyz at once
    ready: httpx2.Response  # /readyz once it answered 200


@pytest.fixture(scope="module")
async def late_start(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Starting]:
    """`serve --http` with a late child and small caps on bodies, sessions (one) and idle time (1 s)."""
    directory = tmp_path_factory.mktemp("late")
    gate = directory / "start"  # the child starts once the probes below have seen it starting
    wait = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.02; done"
    late = {"command": "sh", "args": ["-c", f"{wait}; exec node {EVERYTHING['args'][0]}"]}
    config = write_config(
        directory,
        {
            "mcpServers": {"everything": late},
            "http": {"max_body_bytes": 65536, "max_sessions": 1, "session_idle_seconds": 1},
        },
    )
    async with http_gateway(config) as gateway, httpx2.AsyncClient() as probe:
        with anyio.fail_after(WAIT):
            alive = await probe.get(f"{gateway.base}/healthz")
            starting = await probe.get(f"{gateway.base}/readyz")
            await anyio.Path(gate).touch()
            await gateway.logged("child ready")
            # The sandbox loads meanwhile, in a few hundred milliseconds: poll as a probe would.
            while (ready := await probe.get(f"{gateway.base}/readyz")).status_code != 200:  # noqa: ASYNC110
                await anyio.sleep(0.2)
        yield Starting(gateway, alive, starting, ready)


async def test_body_host_origin_session_and_idle_caps_refuse_with_their_status_and_key(
    late_start: Starting,
) -> None:
    gateway = late_start.gateway
    too_large = await post(gateway, b" " * 70_000)
    bad_host = await post(gateway, INITIALIZE, host="attacker.example")
    bad_origin = await post(gateway, INITIALIZE, origin="http://attacker.example")
    opened = await post(gateway, INITIALIZE)
    one_too_many = await post(gateway, INITIALIZE)
    session = opened.headers["mcp-session-id"]
    await anyio.sleep(2)  # no request in flight for longer than session_idle_seconds
    expired = await post(
        gateway,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
    )
    # The gateway kept serving through all of it: both eras work, a new session too.
    served = [await echo(gateway, mode) for mode, _ in ERAS]
    assert served == ["Echo: ok", "Echo: ok"]
    assert too_large.status_code == 413
    assert error_body(too_large)["data"] == {"key": "http.max_body_bytes", "value": 65536}
    assert bad_host.status_code == 421
    assert error_body(bad_host)["data"] == {"key": "http.allowed_hosts"}
    assert bad_origin.status_code == 403
    assert error_body(bad_origin)["data"] == {"key": "http.allowed_origins"}
    assert opened.status_code == 200
    assert one_too_many.status_code == 503
    assert one_too_many.headers["retry-after"]
    assert error_body(one_too_many)["data"] == {"key": "http.max_sessions", "value": 1}
    assert "too many open sessions" in error_body(one_too_many)["message"]
    assert expired.status_code == 404
    assert error_body(expired)["data"] == {"key": "http.session_idle_seconds", "value": 1}
    logged = [json.dumps(record) for record in gateway.logs]
    assert not [line for line in logged if session in line], "a session id reached the log"


async def echo(gateway: HttpGateway, mode: str) -> Any:
    async with http_client(gateway.url, mode) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool(
                "execute_code", {"code": "tools.everything.echo(message='ok')", "details": True}
            )
    assert result.structured_content is not None
    return result.structured_content["value"]


SLOW_LEDGER = "tools.ledger.slow(seconds=100)"
SLOW_EVERYTHING = "tools.everything.trigger_long_running_operation(duration=100, steps=1)"


class Outcomes:
    """What each named execute_code call came to: its result, or the error the client raised."""

    def __init__(self) -> None:
        self.of: dict[str, types.CallToolResult | MCPError] = {}
        self._changed = anyio.Event()

    async def call(
        self, name: str, client: Client, arguments: dict[str, str], heard: Progress | None = None
    ) -> None:
        try:
            self.of[name] = await client.call_tool("execute_code", arguments, progress_callback=heard)
        except MCPError as error:
            self.of[name] = error
        self._changed.set()
        self._changed = anyio.Event()

    async def held(
        self, scope: anyio.CancelScope, client: Client, running: Progress, code: str = SLOW_LEDGER
    ) -> None:
        """A call (`code`: one that lasts 100 s) that holds its place until `scope` is cancelled (the
        client cancels it)."""
        with scope:
            await self.call("held", client, {"code": code}, running)

    async def settled(self, count: int) -> None:
        while len(self.of) < count:
            await self._changed.wait()


async def test_calls_past_the_in_flight_and_queue_caps_are_refused_and_cancelling_frees_a_place(
    served: HttpGateway,
) -> None:
    quick = {"code": "tools.ledger.entries()"}
    answers, outcomes = Answers(), Outcomes()
    gateway = served
    async with (
        http_client(gateway.url, "auto", answers=answers) as modern,  # a caller: its address
        http_client(gateway.url, "legacy", answers=answers) as first_session,  # a caller each
        http_client(gateway.url, "legacy", answers=answers) as second_session,
    ):
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                modern_held, session_held = anyio.CancelScope(), anyio.CancelScope()
                modern_running, session_running = Progress(), Progress()
                tg.start_soon(outcomes.held, modern_held, modern, modern_running)
                await modern_running.arrived.wait()
                # One of these two waits in the caller's queue, the other finds it full (429).
                tg.start_soon(outcomes.call, "modern second", modern, quick)
                tg.start_soon(outcomes.call, "modern third", modern, quick)
                await outcomes.settled(1)
                # Another caller runs at once: the gateway has two places.
                tg.start_soon(outcomes.held, session_held, first_session, session_running)
                await session_running.arrived.wait()
                # A third caller finds every place taken and the queue full (503).
                await outcomes.call("second session", second_session, quick)
                modern_held.cancel()  # 2026-07-28: the client closes the stream; the queued call runs
                await outcomes.settled(3)
                session_held.cancel()  # handshake era: notifications/cancelled
            # The places are free again: the refused caller is served now.
            await outcomes.call("second session again", second_session, quick)

    queued = [outcomes.of["modern second"], outcomes.of["modern third"]]
    assert sorted(type(outcome).__name__ for outcome in queued) == ["CallToolResult", "MCPError"]
    per_caller = next(outcome for outcome in queued if isinstance(outcome, MCPError))
    assert "http.max_executions_queued_per_caller" in str(per_caller)
    busy = outcomes.of["second session"]
    assert isinstance(busy, MCPError)
    assert "the gateway is busy" in str(busy)
    assert "http.max_executions_queued" in str(busy)
    again = outcomes.of["second session again"]
    assert isinstance(again, types.CallToolResult)
    assert not again.is_error
    # The SDK client read each refusal's body (its message became the error above); the status and
    # Retry-After are in the HTTP answers.
    assert [answer.status_code for answer in answers.seen if answer.status_code >= 400] == [429, 503]
    assert all(answer.headers["retry-after"] for answer in answers.seen if answer.status_code >= 400)


async def test_healthz_answers_at_once_and_readyz_only_once_every_child_has_reported(
    late_start: Starting,
) -> None:
    alive, starting, ready = late_start.alive, late_start.starting, late_start.ready
    assert (alive.status_code, alive.json()) == (200, {"alive": True})
    assert starting.status_code == 503
    assert starting.json()["ready"] is False
    assert starting.json()["children"] == {"connecting": 1}
    assert ready.json() == {
        "ready": True,
        "config": "loaded",
        "sandbox": "ready",
        "children": {"ready": 1},
        "shutting_down": False,
        "state": "off",
    }


@pytest.fixture
async def latch() -> AsyncIterator[dict[str, Any]]:
    """The latch server, served over HTTP from this process."""
    async with http_children({"latch": built(SERVERS / "latch_server.py")}) as children:
        yield children


async def test_sigterm_lets_a_call_in_flight_finish_refuses_new_ones_then_stops(
    tmp_path: Path, latch: dict[str, Any]
) -> None:
    config = write_config(tmp_path, {"mcpServers": latch, "http": {"shutdown_grace_seconds": 60}})
    release = tmp_path / "release"
    code = f"tools.latch.wait_for(path={str(release)!r})\ntools.latch.echo(text='after the signal')"
    heard, outcomes = Progress(), Outcomes()
    async with http_gateway(config) as gateway, http_client(gateway.url) as client:
        with anyio.fail_after(WAIT):
            await client.list_tools()  # the client checks results against the listed output schema
            async with anyio.create_task_group() as tg:
                tg.start_soon(outcomes.call, "in flight", client, {"code": code}, heard)
                await heard.arrived.wait()
                gateway.terminate()
                await gateway.logged("shutting down")
                async with httpx2.AsyncClient() as probe:
                    not_ready = await probe.get(f"{gateway.base}/readyz")
                assert not_ready.status_code == 503
                assert not_ready.json()["shutting_down"] is True
                await outcomes.call("new", client, {"code": "1"})
                release.touch()  # held until now, so the probe and the refusal both land in the grace period
            exit_code = await gateway.stop()
    finished, refused = outcomes.of["in flight"], outcomes.of["new"]
    assert isinstance(finished, types.CallToolResult)
    assert not finished.is_error, text(finished)
    assert (
        text(finished) == "{'result': 'after the signal'}"
    )  # its second call, after the signal, was answered
    assert isinstance(refused, MCPError)
    assert "shutting down" in str(refused)
    assert exit_code == 0
    assert gateway.messages()[-1] == "gateway stopped"


async def test_at_the_default_log_level_the_gateway_says_on_which_port_it_serves_and_that_it_stopped(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"mcpServers": {}})
    env = environment(drop=("CODEMODE_LOG_LEVEL",))  # the level an operator starts with
    async with http_gateway(config, env=env, log_level=None) as gateway:
        with anyio.fail_after(WAIT):
            async with httpx2.AsyncClient() as probe:
                alive = await probe.get(f"{gateway.base}/healthz")
        exit_code = await gateway.stop()
    [serving] = [record for record in gateway.logs if record.get("msg") == "serving MCP over HTTP"]
    assert serving["level"] == "notice"
    assert serving["port"] > 0  # `--port 0`: the port the system picked
    assert serving["url"] == f"http://127.0.0.1:{serving['port']}/mcp"
    assert alive.status_code == 200  # on that port
    assert exit_code == 0
    assert gateway.messages()[-1] == "gateway stopped"
    assert not {"debug", "info"} & {record["level"] for record in gateway.logs}


async def test_calls_still_running_after_the_grace_period_are_cancelled_and_the_gateway_stops(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path, {"mcpServers": {"everything": EVERYTHING}, "http": {"shutdown_grace_seconds": 1}}
    )
    heard, outcomes, exit_codes = Progress(), Outcomes(), list[int]()
    async with http_gateway(config) as gateway, http_client(gateway.url, "legacy") as client:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(outcomes.held, anyio.CancelScope(), client, heard, SLOW_EVERYTHING)
                await heard.arrived.wait()
                exit_codes.append(await gateway.stop())
    assert exit_codes == [0]
    # Without its result: a gateway that waited for the call instead would have answered it (the call's
    # own timeout ends it in a result naming sandbox.tool_call_timeout_seconds).
    assert isinstance(outcomes.of["held"], MCPError)
    assert "grace period over: cancelling calls in flight" in gateway.messages()
