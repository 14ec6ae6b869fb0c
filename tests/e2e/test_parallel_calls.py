"""Calls side by side and mistakes caught before the first one, through the real gateway process.

The children are the escape suite's probe server, served over HTTP from the test process: `overlap`
answers the most of its calls that were ever in flight at once, and `write_note`/`notes` show what
reached it. One gateway (with a quota of five calls per execution) serves every test of the module;
each test uses names of its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from gateway.escape.probe_server import build as build_probe
from tests.e2e.gateway_process import execute, session, write_config
from tests.e2e.http_children import http_children

pytestmark = pytest.mark.anyio

QUOTA = 5  # policy.max_tool_calls: calls per execution
GATHER_OVERLAPS = (
    "import asyncio\n"
    "r = await asyncio.gather(*[tools.{server}.overlap(seconds=0.3, meet={meet}) for _ in range(5)])\n"
    "max(x['result'] for x in r)"
)


@dataclass(frozen=True)
class Gateway:
    client: ClientSession
    audit: Path

    def audited_calls(self) -> list[dict[str, Any]]:
        lines = self.audit.read_text(encoding="utf-8").splitlines() if self.audit.exists() else []
        return [record for record in map(json.loads, lines) if record.get("kind") == "tool_call"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    home = tmp_path_factory.mktemp("parallel-calls")
    audit = home / "audit.jsonl"
    async with http_children({"wide": build_probe, "narrow": build_probe}) as children:
        servers = {**children, "narrow": {**children["narrow"], "max_concurrent_calls": 2}}
        config = {"mcpServers": servers, "audit": {"path": str(audit)}, "policy": {"max_tool_calls": QUOTA}}
        async with session(write_config(home, config)) as client:
            yield Gateway(client, audit)


async def test_gathered_calls_reach_the_child_side_by_side_up_to_its_cap(gateway: Gateway) -> None:
    audited_before = len(gateway.audited_calls())
    # The calls meet as many in flight as the child's cap lets through, however slowly they arrive.
    wide = await execute(gateway.client, GATHER_OVERLAPS.format(server="wide", meet=5))
    narrow = await execute(gateway.client, GATHER_OVERLAPS.format(server="narrow", meet=2))
    assert wide["value"] == 5, wide
    assert narrow["value"] == 2, narrow  # max_concurrent_calls of that child
    assert len(gateway.audited_calls()) - audited_before == 10


async def test_a_quota_admits_exactly_its_count_of_calls_raced_together(gateway: Gateway) -> None:
    code = (
        "import asyncio\n"
        "r = await asyncio.gather(*[tools.wide.tick(name='q') for _ in range(10)], return_exceptions=True)\n"
        "[sum(not isinstance(x, Exception) for x in r), "
        "sorted({x.kind for x in r if isinstance(x, Exception)})]"
    )
    raced = await execute(gateway.client, code)
    after = await execute(gateway.client, "tools.wide.tick(name='q')['result']")
    assert raced["value"] == [QUOTA, ["QuotaExceeded"]], raced
    assert after["value"] == QUOTA + 1  # exactly five of the ten reached the child


async def test_a_wrong_keyword_refuses_the_run_before_its_first_call_changes_anything(
    gateway: Gateway,
) -> None:
    code = "tools.wide.write_note(name='refused', text='first change')\ntools.wide.echo(txt='typo')"
    refused = await execute(gateway.client, code)
    notes = await execute(gateway.client, "tools.wide.notes()")
    assert refused["ok"] is False
    message = refused["error"]["message"]
    assert "the snippet was not run" in message
    assert "line 2:" in message
    assert "txt" in message
    assert "refused" not in notes["value"], notes
    assert refused["tool_calls"] == []


async def test_an_unknown_tool_is_named_with_its_did_you_mean_before_the_run(gateway: Gateway) -> None:
    code = "import asyncio\nawait asyncio.gather(tools.wide.echo(text='x'), tools.wide.eko(text='y'))"
    refused = await execute(gateway.client, code)
    direct = await execute(gateway.client, "name = 'wide.' + 'eko'\ncall_tool(name, text='y')")
    found = refused["error"]["message"].split("\n  line 2: ")[1]
    assert found.startswith("unknown tool 'wide.eko'; did you mean wide.echo")
    # The same words as the call raises at run time (a name built in code is left to run time).
    assert direct["error"]["message"] == found
