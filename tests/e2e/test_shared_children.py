"""What one caller's calls leave in a child every caller shares, through the real gateway process over
HTTP with two principals' tokens (static tokens for alice and bob) and a real stdio child
(tests/servers/neighbour_server.py): the gateway holds one session per child for all of them.

What a child sends during a call (log messages, progress, resource notifications, elicitation and
sampling requests) must reach no caller, not even the one whose call is running; what a child wrote
to stderr as it crashed on one caller's input must not reach another caller in the errors and
overviews that describe the child while it is down (it goes to the gateway's log). What the child
itself keeps (a resource it made during one caller's call) is the child's, and reaches every caller:
that one is inherent, and documented."""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode

from tests.cli.command import run_command
from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import WAIT, environment, text, write_config
from tests.e2e.test_background import ALICE, BOB, client_of
from tests.real_servers import SERVERS

pytestmark = pytest.mark.anyio

NEIGHBOUR_SERVER = SERVERS / "neighbour_server.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def neighbour_gateway(directory: Path, audit: Path | None = None) -> AsyncIterator[HttpGateway]:
    """The gateway over the neighbour child, with static tokens for alice and bob (and an audit log at
    `audit`). A crashed child is restarted at once, and its restart (which waits without serving) is
    given minutes to connect, so that it stays down, reconnecting, while a test looks."""
    neighbour = {
        "command": sys.executable,
        "args": [str(NEIGHBOUR_SERVER)],
        "env": {"NEIGHBOUR_CRASHED": str(directory / "neighbour.crashed")},
        "startup_timeout_seconds": WAIT,
        "restart": {"initial_seconds": 0.01},
    }
    config: dict[str, Any] = {
        "mcpServers": {"neighbour": neighbour},
        "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
    }
    if audit is not None:
        config["audit"] = {"path": str(audit)}
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    async with http_gateway(write_config(directory, config), env=env) as gateway:
        yield gateway


class Heard:
    """Everything the gateway sent a client on its own: requests, notifications, progress."""

    def __init__(self) -> None:
        self.items: list[str] = []

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.items.append(f"elicitation: {params.message}")
        return types.ElicitResult(action="accept", content={})

    async def sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.items.append(f"sampling: {params.model_dump_json()}")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="sampled"), model="m"
        )

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.items.append(f"log: {params.model_dump_json()}")

    async def message(self, message: Any) -> None:
        self.items.append(f"message: {message!r}")

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.items.append(f"progress: {message}")


@asynccontextmanager
async def listening_client(
    gateway: HttpGateway, token: str, mode: ConnectMode, heard: Heard
) -> AsyncIterator[Client]:
    """The SDK's Client as `token`'s caller, declaring elicitation and sampling, hearing everything."""
    async with client_of(
        gateway,
        mode,
        token=token,
        read_timeout=WAIT,  # its calls wait while the other caller's hold the child
        elicitation_callback=heard.elicitation,
        sampling_callback=heard.sampling,
        logging_callback=heard.logging,
        message_handler=heard.message,
    ) as client:
        yield client


async def test_what_a_shared_child_sends_during_two_callers_calls_reaches_neither_caller(
    tmp_path: Path,
) -> None:
    heard = {"alice": Heard(), "bob": Heard()}
    answers: dict[str, types.CallToolResult] = {}
    async with (
        neighbour_gateway(tmp_path) as gateway,
        # alice in a handshake-era session (a stream of its own for what the server sends unasked),
        # bob on 2026-07-28
        listening_client(gateway, ALICE, "legacy", heard["alice"]) as alice,
        listening_client(gateway, BOB, "auto", heard["bob"]) as bob,
    ):

        async def reach_out(name: str, client: Client) -> None:
            code = f"tools.neighbour.reach_out(tag='{name}-tag')"
            answers[name] = await client.call_tool(
                "execute_code", {"code": code}, progress_callback=heard[name].progress
            )

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as both:  # the child answers once both are in flight
                both.start_soon(reach_out, "alice", alice)
                both.start_soon(reach_out, "bob", bob)
            after = await bob.call_tool(
                "execute_code", {"code": "tools.neighbour.echo(text='still serving')"}
            )
    for name, answer in answers.items():
        assert not answer.is_error, text(answer)
        outcome = text(answer)
        assert "'together': ['alice-tag', 'bob-tag']" in outcome  # both calls were in the child at once
        # The child's requests were refused by the gateway, not answered by a client.
        assert "'elicitation': 'refused: " in outcome, outcome
        assert "'sampling': 'refused: " in outcome, outcome
        assert "sampled" not in outcome
        # The client heard the gateway's own progress of its call, and nothing the child sent.
        assert [item for item in heard[name].items if "1 tool call" in item], heard[name].items
        assert [item for item in heard[name].items if "-tag" in item] == []
    assert text(after) == "{'result': 'still serving'}"


async def wait_for_stderr_line(gateway: HttpGateway, line: str) -> None:
    """Wait until the gateway has logged `line` as one a child wrote to stderr."""
    while not [r for r in gateway.logs if r.get("msg") == "child stderr" and r.get("line") == line]:
        await gateway.new_record.wait()


async def test_what_a_child_wrote_to_stderr_crashing_on_one_callers_input_never_reaches_another(
    tmp_path: Path,
) -> None:
    private = f"alice-private-{secrets.token_hex(8)}"
    async with neighbour_gateway(tmp_path) as gateway:
        async with client_of(gateway, token=ALICE, read_timeout=WAIT) as alice:
            with anyio.fail_after(WAIT):
                crashed = await alice.call_tool(
                    "execute_code", {"code": f"tools.neighbour.fail_loudly(text={private!r})"}
                )
                # The child's restart has begun: the gateway is done with the crashed connection.
                await wait_for_stderr_line(gateway, "neighbour restarting")
        async with client_of(gateway, token=BOB, read_timeout=WAIT) as bob:
            with anyio.fail_after(WAIT):
                called = await bob.call_tool("execute_code", {"code": "tools.neighbour.echo(text='hi')"})
                described = await bob.call_tool("search_docs", {"server": "neighbour"})
                overview = await bob.call_tool("search_docs", {})
                unknown = await bob.call_tool("execute_code", {"code": "tools.neighbour.no_such_tool()"})
    assert crashed.is_error
    seen_by_bob = {
        "call": text(called),
        "search_docs(server=...)": text(described),
        "overview": text(overview),
        "unknown tool": text(unknown),
    }
    assert called.is_error
    assert "'neighbour' is reconnecting (attempt 1)" in seen_by_bob["call"], seen_by_bob["call"]
    assert "reconnecting" in seen_by_bob["overview"], seen_by_bob["overview"]
    assert {where: private in seen for where, seen in seen_by_bob.items()} == dict.fromkeys(
        seen_by_bob, False
    )
    assert "its last stderr lines are in the gateway's log" in seen_by_bob["call"]
    # The operator still reads what the child said, in the gateway's log.
    tails = [
        r for r in gateway.logs if r.get("msg") == "child's last stderr lines before its connection ended"
    ]
    assert [r["child"] for r in tails if private in str(r.get("stderr"))] == ["neighbour"], tails


async def test_a_resource_a_child_makes_during_one_callers_call_is_listed_and_read_by_another(
    tmp_path: Path,
) -> None:
    """Inherent to one session per child, and documented (docs/security.md, "What a shared child
    keeps"): what the child itself keeps from a call is the child's, and every caller reaches the
    child. Containing it takes one child (or gateway) per tenant."""
    kept_by_alice = f"alice-kept-{secrets.token_hex(4)}"
    async with neighbour_gateway(tmp_path) as gateway:
        async with listening_client(gateway, ALICE, "auto", Heard()) as alice:
            with anyio.fail_after(WAIT):
                made = await alice.call_tool(
                    "execute_code", {"code": f"tools.neighbour.keep(text={kept_by_alice!r})"}
                )
        async with listening_client(gateway, BOB, "auto", Heard()) as bob:
            code = (
                "listed = resources.neighbour.list()\n"
                "uris = [r['uri'] for r in listed['resources']]\n"
                "[resources.neighbour.read(uri) for uri in uris]"
            )
            with anyio.fail_after(WAIT):
                read = await bob.call_tool("execute_code", {"code": code})
    assert not made.is_error, text(made)
    assert not read.is_error, text(read)
    assert kept_by_alice in text(read)


# A C1 CSI erasing the line, a carriage return, a right-to-left override and a line separator: what a
# terminal would act on, or a log reader split at, if it reached the operator raw.
TERMINAL_TRICKS = "\x9b2K\r\u202e\u2028forged\x1b]0;title\x07"
SHOWN_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


async def test_what_a_snippet_passes_a_child_reaches_the_operators_logs_and_audit_output_escaped(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.jsonl"
    async with (
        neighbour_gateway(tmp_path, audit) as gateway,
        client_of(gateway, token=ALICE, read_timeout=WAIT) as alice,
    ):
        with anyio.fail_after(WAIT):
            await alice.call_tool(
                "execute_code", {"code": f"tools.neighbour.fail_loudly(text={TERMINAL_TRICKS!r})"}
            )
            await wait_for_stderr_line(gateway, f"cannot handle {TERMINAL_TRICKS}")
    with anyio.fail_after(WAIT):
        table = await run_command("audit", "--path", str(audit))
        as_json = await run_command("audit", "--path", str(audit), "--json")
    shown = {
        "log": b"\n".join(gateway.lines).decode(),
        "audit": table[1],
        "audit --json": as_json[1],
    }
    for where, output in shown.items():
        assert TERMINAL_TRICKS[2:] not in output, where
        assert not SHOWN_RAW.search(output), (where, output)
    # Escaped as JSON escapes: the same value read back.
    sent = [json.loads(line).get("arguments") for line in as_json[1].splitlines()]
    assert {"text": TERMINAL_TRICKS} in sent, sent
