"""Team middleware end to end: the real gateway process imports it, real children answer around it.

The middleware lives in tests/middleware/team_hooks.py; the gateway process finds it on PYTHONPATH.
One gateway process serves the module; each test reads only the ledger entries and audit records
written since it began.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.gateway_process import (
    TINY,
    cli,
    environment,
    execute,
    ledger_entries,
    ledger_server,
    search_docs,
    session,
    write_config,
)
from tests.real_servers import REPO

pytestmark = pytest.mark.anyio

HOOKS = "tests.middleware.team_hooks"
MIDDLEWARE = [
    f"{HOOKS}:rewrite_entries",
    f"{HOOKS}:require_ticket",
    f"{HOOKS}:crash_on_boom",
    f"{HOOKS}:shout",
]
ENV = environment({"PYTHONPATH": str(REPO)})
CATCH = "try:\n    r = {call}\nexcept ToolError as e:\n    r = [e.kind, str(e)]\nr"


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "mcpServers": {"ledger": ledger_server(tmp_path), "tiny": TINY},
            "middleware": MIDDLEWARE,
            # What a middleware sends is checked against the policy too: no entry over 60 characters.
            "policy": {"tools": {"ledger.append": {"args": {"properties": {"entry": {"maxLength": 60}}}}}},
            "audit": {"path": "audit.jsonl"},
        },
    )


def _tool_calls(directory: Path) -> list[dict[str, Any]]:
    path = directory / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [record for record in map(json.loads, lines) if record["kind"] == "tool_call"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that the one gateway below serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared gateway's config, ledger and audit log live."""
    return tmp_path_factory.mktemp("middleware")


@pytest.fixture(scope="module")
async def client(workdir: Path) -> AsyncIterator[ClientSession]:
    """A session with the one gateway process of this module (ledger and tiny behind the middleware)."""
    async with session(_config(workdir), env=ENV) as served:
        yield served


@dataclass
class Since:
    """What reached the shared ledger and audit log since a test began."""

    directory: Path
    entries_before: int
    calls_before: int

    def entries(self) -> list[str]:
        return ledger_entries(self.directory)[self.entries_before :]

    def tool_calls(self) -> list[dict[str, Any]]:
        return _tool_calls(self.directory)[self.calls_before :]


@pytest.fixture
def since(workdir: Path) -> Since:
    return Since(workdir, len(ledger_entries(workdir)), len(_tool_calls(workdir)))


async def test_a_middleware_rewrites_the_arguments_the_child_gets(
    client: ClientSession, since: Since
) -> None:
    result = await execute(client, "tools.ledger.append(entry='deploy')")
    assert result["ok"], result
    assert since.entries() == ["deploy (via gateway)"]
    [record] = since.tool_calls()
    assert record["arguments"] == {"entry": "deploy (via gateway)"}  # audited as the child got it


async def test_a_middleware_cannot_send_what_the_policy_refuses(client: ClientSession, since: Since) -> None:
    result = await execute(client, CATCH.format(call="tools.ledger.append(entry='pad:x')"))
    kind, message = result["value"]
    assert kind == "PolicyDenied"
    assert f"as middleware {HOOKS}:rewrite_entries changed them" in message
    assert since.entries() == []


async def test_a_middleware_refuses_a_call_with_a_message_the_snippet_reads(
    client: ClientSession, since: Since
) -> None:
    refused = await execute(client, CATCH.format(call="tools.ledger.note(entry='no ticket')"))
    allowed = await execute(client, "tools.ledger.note(entry='T-12 rollback')")
    assert refused["value"] == ["ToolError", "ledger notes need a ticket: start the entry with T-<number>"]
    assert allowed["ok"], allowed
    assert since.entries() == ["T-12 rollback"]
    first, second = since.tool_calls()
    assert first["middleware"] == f"{HOOKS}:require_ticket"
    assert not first["ok"]
    assert "middleware" not in second


async def test_a_middleware_that_crashes_fails_the_call_closed_and_the_gateway_serves_on(
    client: ClientSession, since: Since
) -> None:
    crashed = await execute(client, CATCH.format(call="tools.tiny.echo(text='boom')"))
    after = await execute(client, "tools.tiny.echo(text='still here')")
    kind, message = crashed["value"]
    assert kind == "MiddlewareFailed"
    assert f"middleware {HOOKS}:crash_on_boom failed (RuntimeError)" in message
    assert "internal detail" not in message
    assert after["value"] == {"result": "STILL HERE"}
    failed = since.tool_calls()[0]
    assert failed["error"] == "MiddlewareFailed"
    assert failed["middleware"] == f"{HOOKS}:crash_on_boom"


async def test_a_middleware_changes_the_result_the_snippet_receives(client: ClientSession) -> None:
    result = await execute(client, "tools.tiny.echo(text='quiet please')")
    assert result["value"] == {"result": "QUIET PLEASE"}


async def test_a_middleware_hides_a_tool_from_search_docs_and_annotates_another(
    client: ClientSession,
) -> None:
    tiny = await search_docs(client, server="tiny")
    found = await search_docs(client, "environment variables of the server")
    ledger = await search_docs(client, server="ledger", detail="full")
    assert "echo" in tiny
    assert "env" not in tiny.replace("environment", "")
    assert "tiny.env" not in found
    assert "[needs a ticket] The same as append" in ledger


async def test_check_refuses_a_config_whose_middleware_cannot_be_imported(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "middleware": ["team_hookz:redact_pii"]})
    code, _, err = await cli("check", "--config", str(config), env=ENV)
    assert code == 2, err
    assert "middleware[0]" in err
    assert "cannot import 'team_hookz'" in err
