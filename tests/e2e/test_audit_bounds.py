"""The audit log under one caller's volume, through the real gateway process over HTTP: bounded
records, and every other caller's history kept."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.audit._read import audit_files
from tests.e2e.gateway_http import http_client, http_gateway
from tests.e2e.gateway_process import WAIT, environment, write_config
from tests.e2e.http_children import http_children
from tests.real_servers import TINY_SERVER, built

pytestmark = pytest.mark.anyio

ALICE = "alice-token-" + "a" * 40
MALLORY = "mallory-token-" + "m" * 40

# Sixty calls to a tool that does not exist, each with 240 KB of arguments built at run time
# (non-ASCII: the log escapes each character as six).
FLOOD = """
big = 'é' * 120_000
name = '.'.join(['nope', 'missing'])
for _ in range(60):
    try:
        call_tool(name, text=big)
    except ToolError:
        pass
'flooded'
"""


def _records(audit: Path) -> list[dict[str, Any]]:
    lines = [line for path in reversed(audit_files(audit)) for line in path.read_text("ascii").splitlines()]
    return [json.loads(line) for line in lines]


@pytest.fixture
async def tiny() -> AsyncIterator[dict[str, Any]]:
    """The tiny test server, served over HTTP from this process (the gateway is the process under test)."""
    async with http_children({"tiny": built(TINY_SERVER)}) as children:
        yield children


async def test_one_callers_flood_of_huge_unknown_calls_leaves_the_others_records_and_bounded_lines(
    tmp_path: Path, tiny: dict[str, Any]
) -> None:
    audit = tmp_path / "audit.jsonl"
    config = write_config(
        tmp_path,
        {
            "mcpServers": tiny,
            "audit": {"path": str(audit), "max_bytes": 65_536, "backups": 3, "principal_budget_bytes": 8_192},
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "mallory": "${MALLORY_TOKEN}"}},
        },
    )
    env = environment({"ALICE_TOKEN": ALICE, "MALLORY_TOKEN": MALLORY})
    async with http_gateway(config, env=env) as gateway:
        async with (
            http_client(gateway.url, token=ALICE) as alice,
            http_client(gateway.url, token=MALLORY) as mallory,
        ):
            with anyio.fail_after(WAIT):
                before = await alice.call_tool(
                    "execute_code", {"code": "tools.tiny.echo(text='before')", "details": True}
                )
                flood = await mallory.call_tool("execute_code", {"code": FLOOD, "details": True})
                after = await alice.call_tool(
                    "execute_code", {"code": "tools.tiny.echo(text='after')", "details": True}
                )
        assert await gateway.stop() == 0
    for result in (before, flood, after):
        assert result.structured_content is not None
        assert result.structured_content["ok"], result.structured_content["error"]
    records = _records(audit)
    alice_calls = [r for r in records if r.get("principal") == "alice" and r["kind"] == "tool_call"]
    assert [r["arguments"] for r in alice_calls] == [{"text": "before"}, {"text": "after"}]
    assert all(len(line) <= 2_048 for path in audit_files(audit) for line in path.read_bytes().splitlines())
    flooded = [r for r in records if r.get("principal") == "mallory" and r["kind"] == "tool_call"]
    assert all("arguments" not in r and "arguments_sha256" in r for r in flooded)
    [summary] = [r for r in records if r["kind"] == "suppressed"]
    assert summary["principal"] == "mallory"
    assert summary["records"] + len(flooded) == 61  # the sixty calls and the execution
