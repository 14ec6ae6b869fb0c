"""Three gateway replicas behind a real HAProxy, driven with the SDK's client on both protocol eras.

The replicas are three `serve --http` processes reading byte-identical configs and holding the same
approvals key, nothing else shared; each config sits in a directory of its own, so each replica's
audit log (`audit.jsonl`, relative) says which replica served what. The children (tiny and ledger)
are served once over streamable HTTP from the test process, as a deployment shares remote servers, so
the approved calls are counted where they land, whichever replica made them. HAProxy balances round
robin, sticky to Mcp-Session-Id for handshake-era sessions.
"""

from __future__ import annotations

import json
import secrets
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.e2e.gateway_http import User, http_client
from tests.e2e.gateway_process import (
    WAIT,
    environment,
    ledger_entries,
    search_docs,
    text,
    write_config,
)
from tests.e2e.http_children import ledger_over_http
from tests.e2e.load_balancer import HAPROXY, NOT_INSTALLED, Frontend, free_ports, haproxy, replicas
from tests.real_servers import TINY_SERVER, built

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(HAPROXY is None, reason=NOT_INSTALLED)]

REPLICAS = 3
KEY_VAR = "CODEMODE_TEST_APPROVALS_KEY"
MODERN_CLIENTS, MODERN_CALLS = 4, 6  # 2026-07-28: each call is a request of its own, balanced alone
SESSIONS, SESSION_CALLS = 3, 4  # handshake era: each session's requests must reach its replica
MIXED_APPROVALS = 2
# A side effect needing no approval, then two that do: three rounds, each resuming where the last
# paused. A replica that replayed a call instead of reading its answer from the state would repeat it.
THREE_ROUNDS = """
import random
token = f"{random.getrandbits(64):016x}"
tools.ledger.note(entry=f"noted {token}")
tools.ledger.append(entry=f"first {token}")
tools.ledger.append(entry=f"second {token}")
token
"""


def replica_config(directory: Path, children: dict[str, Any]) -> Path:
    """The config every replica reads (the same bytes), in a directory of the replica's own."""
    directory.mkdir()
    return write_config(
        directory,
        {
            "mcpServers": children,
            "policy": {"approve": ["ledger.append"]},
            "approvals": {"key": "${" + KEY_VAR + "}"},
            "audit": {"path": "audit.jsonl"},
            # Without `auth`, every 2026-07-28 caller behind the balancer is the balancer's address:
            # the per-caller caps would count all of them as one caller.
            "http": {
                "max_executions_in_flight": 16,
                "max_executions_in_flight_per_caller": 16,
                "max_executions_queued": 64,
                "max_executions_queued_per_caller": 64,
            },
        },
    )


class Answers:
    """Every request's answer, by a name the request alone carries: nothing lost, nothing crossed."""

    def __init__(self) -> None:
        self.of: dict[str, Any] = {}

    async def modern(self, url: str, client_number: int) -> None:
        async with http_client(url, "auto") as client, anyio.create_task_group() as tg:
            assert client.session.protocol_version == "2026-07-28"
            for call in range(MODERN_CALLS):  # side by side: each a request of its own
                tg.start_soon(self.modern_call, client, f"modern-{client_number}-{call}", call % 2 == 1)

    async def modern_call(self, client: Client, name: str, search: bool) -> None:
        if search:
            found = await search_docs(client, "echo text unchanged")
            self.of[name] = "tiny.echo" in found
        else:
            self.of[name] = await echo(client, name)

    async def session(self, url: str, session_number: int) -> None:
        async with http_client(url, "legacy") as client:
            era = client.session.protocol_version
            for call in range(SESSION_CALLS):
                name = f"session-{session_number}-{call}"
                self.of[name] = (era, await echo(client, name))

    async def approved(self, url: str, name: str, code: str) -> None:
        user = User()
        async with http_client(url, "auto", elicitation=user) as client:
            result = await client.call_tool("execute_code", {"code": code, "details": True})
        assert not result.is_error, text(result)
        assert result.structured_content is not None
        self.of[name] = (len(user.prompts), result.structured_content["value"])


async def echo(client: Client, name: str) -> Any:
    result = await client.call_tool(
        "execute_code", {"code": f"tools.tiny.echo(text={name!r})", "details": True}
    )
    assert result.structured_content is not None, text(result)
    return result.structured_content["value"]


def audit_records(directory: Path) -> list[dict[str, Any]]:
    path = directory / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


async def test_replicas_behind_haproxy_answer_every_request_keep_sessions_and_resume_each_others_runs(
    tmp_path: Path,
) -> None:
    env = environment({KEY_VAR: secrets.token_hex(32)})
    homes = [tmp_path / f"replica-{index}" for index in range(REPLICAS)]
    mixed, approvals, plain = free_ports(3)
    answers = Answers()
    async with ledger_over_http(tmp_path, tiny=built(TINY_SERVER)) as children:
        configs = [replica_config(home, children) for home in homes]
        assert len({config.read_bytes() for config in configs}) == 1
        async with replicas(configs, env) as gateways:
            addresses = [gateway.url.split("/")[2] for gateway in gateways]
            frontends = [
                Frontend("mixed", mixed, addresses),
                # The approval rounds below have a round robin of their own: each retry reaches the
                # next replica.
                Frontend("approvals", approvals, addresses),
                Frontend("plain", plain, addresses, sticky=False),
            ]
            async with haproxy(tmp_path, frontends):
                url = f"http://127.0.0.1:{mixed}/mcp"
                with anyio.fail_after(WAIT):
                    async with anyio.create_task_group() as tg:
                        for number in range(MODERN_CLIENTS):
                            tg.start_soon(answers.modern, url, number)
                        for number in range(SESSIONS):
                            tg.start_soon(answers.session, url, number)
                        for number in range(MIXED_APPROVALS):
                            code = f"tools.ledger.append(entry='mixed-{number}')"
                            tg.start_soon(answers.approved, url, f"mixed-{number}", code)
                        approvals_url = f"http://127.0.0.1:{approvals}/mcp"
                        tg.start_soon(answers.approved, approvals_url, "three rounds", THREE_ROUNDS)
                # The control: without the sticky table, a session's second request finds another replica.
                with anyio.fail_after(WAIT), pytest.raises(ExceptionGroup) as unsticky:
                    await answers.session(f"http://127.0.0.1:{plain}/mcp", SESSIONS)

    # Nothing lost: every request got its own answer.
    for number in range(MODERN_CLIENTS):
        for call in range(MODERN_CALLS):
            name = f"modern-{number}-{call}"
            assert answers.of[name] == (True if call % 2 else {"result": name}), name
    for number in range(SESSIONS):
        for call in range(SESSION_CALLS):
            name = f"session-{number}-{call}"
            assert answers.of[name] == ("2025-11-25", {"result": name}), name
    assert unsticky.group_contains(MCPError, match="session not found", depth=2)

    # Each approved call reached the child once, though the rounds ran on different replicas.
    prompts, token = answers.of["three rounds"]
    assert prompts == 2
    for number in range(MIXED_APPROVALS):
        asked, appended = answers.of[f"mixed-{number}"]
        assert (asked, sorted(appended)) == (1, ["result"])
    expected = {f"noted {token}", f"first {token}", f"second {token}"} | {
        f"mixed-{number}" for number in range(MIXED_APPROVALS)
    }
    entries = ledger_entries(tmp_path)
    assert sorted(entries) == sorted(expected), entries

    audits = [audit_records(home) for home in homes]
    [execution_id] = {
        record["execution_id"]
        for records in audits
        for record in records
        if record["kind"] == "tool_call" and record.get("arguments") == {"entry": f"noted {token}"}
    }
    rounds = sorted(
        (record.get("round", 1), replica)
        for replica, records in enumerate(audits)
        for record in records
        if record["kind"] == "execution" and record["execution_id"] == execution_id
    )
    assert [number for number, _ in rounds] == [1, 2, 3]
    served_by = [replica for _, replica in rounds]
    assert all(a != b for a, b in pairwise(served_by)), served_by
    approved = [
        record
        for records in audits
        for record in records
        if record["kind"] == "tool_call"
        and record["tool"] == "ledger.append"
        and record["approval"] == "approved"
    ]
    assert len(approved) == 2 + MIXED_APPROVALS
    assert all(record["ok"] for record in approved)
