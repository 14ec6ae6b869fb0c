"""Calls side by side and mistakes caught before the first one, through the real gateway process.

The child is the escape suite's probe server over stdio: `overlap` answers the most of its calls that
were ever in flight at once, and `write_note`/`notes` show what reached it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gateway_process import execute, session, write_config

pytestmark = pytest.mark.anyio

GATHER_OVERLAPS = (
    "import asyncio\n"
    "r = await asyncio.gather(*[tools.{server}.overlap(seconds=0.3) for _ in range(5)])\n"
    "max(x['result'] for x in r)"
)


def probe(**settings: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "gateway.escape.probe_server"], **settings}


def config(tmp_path: Path, **extra: Any) -> Path:
    servers = {"wide": probe(), "narrow": probe(max_concurrent_calls=2)}
    return write_config(
        tmp_path, {"mcpServers": servers, "audit": {"path": str(tmp_path / "audit.jsonl")}, **extra}
    )


def audited_calls(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [record for record in map(json.loads, lines) if record.get("kind") == "tool_call"]


async def test_gathered_calls_reach_the_child_side_by_side_up_to_its_cap(tmp_path: Path) -> None:
    async with session(config(tmp_path)) as client:
        wide = await execute(client, GATHER_OVERLAPS.format(server="wide"))
        narrow = await execute(client, GATHER_OVERLAPS.format(server="narrow"))
    assert wide["value"] == 5, wide
    assert narrow["value"] == 2, narrow  # max_concurrent_calls of that child
    assert len(audited_calls(tmp_path)) == 10


async def test_a_quota_admits_exactly_its_count_of_calls_raced_together(tmp_path: Path) -> None:
    code = (
        "import asyncio\n"
        "r = await asyncio.gather(*[tools.wide.tick(name='q') for _ in range(10)], return_exceptions=True)\n"
        "[sum(not isinstance(x, Exception) for x in r), "
        "sorted({x.kind for x in r if isinstance(x, Exception)})]"
    )
    async with session(config(tmp_path, policy={"max_tool_calls": 5})) as client:
        raced = await execute(client, code)
        after = await execute(client, "tools.wide.tick(name='q')['result']")
    assert raced["value"] == [5, ["QuotaExceeded"]], raced
    assert after["value"] == 6  # exactly five of the ten reached the child


async def test_a_wrong_keyword_refuses_the_run_before_its_first_call_changes_anything(tmp_path: Path) -> None:
    code = "tools.wide.write_note(name='a', text='first change')\ntools.wide.echo(txt='typo')"
    async with session(config(tmp_path)) as client:
        refused = await execute(client, code)
        notes = await execute(client, "tools.wide.notes()")
    assert refused["ok"] is False
    message = refused["error"]["message"]
    assert "the snippet was not run" in message
    assert "line 2:" in message
    assert "txt" in message
    assert notes["value"] == {}, notes
    assert refused["tool_calls"] == []


async def test_an_unknown_tool_is_named_with_its_did_you_mean_before_the_run(tmp_path: Path) -> None:
    code = "import asyncio\nawait asyncio.gather(tools.wide.echo(text='x'), tools.wide.eko(text='y'))"
    async with session(config(tmp_path)) as client:
        refused = await execute(client, code)
        direct = await execute(client, "name = 'wide.' + 'eko'\ncall_tool(name, text='y')")
    found = refused["error"]["message"].split("\n  line 2: ")[1]
    assert found.startswith("unknown tool 'wide.eko'; did you mean wide.echo")
    # The same words as the call raises at run time (a name built in code is left to run time).
    assert direct["error"]["message"] == found
