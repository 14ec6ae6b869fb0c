"""The real gateway process, driven by the official TypeScript MCP SDK client (tests/e2e/ts_client)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gateway_process import TINY, ledger_entries, ledger_server, write_config
from tests.e2e.ts_client import Elicitation, call, execute, gateway_script, run_ts_client

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, **sandbox: Any) -> Path:
    return write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "sandbox": sandbox})


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def _answer(report: dict[str, Any], index: int) -> dict[str, Any]:
    """The CallToolResult of step `index`, which the SDK accepted (no error, no schema mismatch)."""
    outcome = report["results"][index]
    assert outcome["error"] is None, f"{outcome['error']}\ngateway log:\n{report['stderr']}"
    assert outcome["result"] is not None
    return outcome["result"]


async def test_the_typescript_client_sees_exactly_the_two_tools_and_negotiates_its_newest_protocol(
    tmp_path: Path,
) -> None:
    report = await run_ts_client(gateway_script(_config(tmp_path)))
    assert sorted(report["tools"]) == ["execute_code", "search_docs"]
    assert report["sdkVersion"] == "1.32.2"  # the Makefile's pin
    assert report["protocolVersion"] == report["latestProtocolVersion"], report["supportedProtocolVersions"]
    assert report["serverInfo"]["name"] == "codemode-gateway"


async def test_execute_codes_result_reaches_the_typescript_client_as_the_value_alone(tmp_path: Path) -> None:
    code = "tools.tiny.echo(text='hi')"
    script = gateway_script(
        _config(tmp_path), execute(code), call("execute_code", {"code": code, "details": True})
    )
    report = await run_ts_client(script)
    assert "execute_code" not in report["outputSchemaTools"]  # nothing for a client to check it against
    plain, detailed = _answer(report, 0), _answer(report, 1)
    assert plain["isError"] is False
    assert plain["content"] == [{"type": "text", "text": "{'result': 'hi'}"}]
    assert "structuredContent" not in plain
    assert detailed["structuredContent"]["value"] == {"result": "hi"}
    assert [c["tool"] for c in detailed["structuredContent"]["tool_calls"]] == ["tiny.echo"]
    assert json.loads(_text(detailed)) == detailed["structuredContent"]


async def test_a_failing_snippet_comes_back_as_is_error_with_its_own_traceback(tmp_path: Path) -> None:
    report = await run_ts_client(gateway_script(_config(tmp_path), execute("x = 1\n1/0")))
    result = _answer(report, 0)
    assert result["isError"] is True
    text = _text(result)
    assert 'File "<snippet>", line 2' in text
    assert "1/0" in text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "structuredContent" not in result


async def test_progress_notifications_of_a_long_snippet_strictly_increase(tmp_path: Path) -> None:
    report = await run_ts_client(
        gateway_script(_config(tmp_path), execute("import time; time.sleep(2.5)", progress=True))
    )
    assert _answer(report, 0)["isError"] is False
    notes = report["results"][0]["progress"]
    values = [note["progress"] for note in notes]
    assert len(values) >= 2, notes
    assert all(a < b for a, b in pairwise(values)), notes


async def test_an_aborted_call_returns_at_once_and_the_next_call_is_served(tmp_path: Path) -> None:
    # One slot and an hour's budget: a snippet still sleeping after the cancel would hold the next call
    # past the client's own request timeout and the test's bound, not a little longer.
    config = _config(tmp_path, max_concurrent_executions=1, timeout_seconds=3600)
    script = gateway_script(
        config,
        execute("import time; time.sleep(3000)", progress=True, cancel_after_ms=1000),
        execute("'next'"),
    )
    report = await run_ts_client(script)
    aborted = report["results"][0]
    assert aborted["result"] is None
    assert "aborted by the script after 1000 ms" in aborted["error"]
    assert _text(_answer(report, 1)) == "'next'"


def _ledger_config(tmp_path: Path) -> Path:
    config = {"mcpServers": {"ledger": ledger_server(tmp_path)}, "policy": {"approve": ["ledger.append"]}}
    return write_config(tmp_path, config)


APPEND_TWICE = "print(tools.ledger.append(entry='one'))\nprint(tools.ledger.append(entry='two'))\n'done'"


async def test_the_typescript_clients_user_approves_each_call_and_each_reaches_the_child_once(
    tmp_path: Path,
) -> None:
    report = await run_ts_client(
        gateway_script(_ledger_config(tmp_path), execute(APPEND_TWICE), elicitation="accept")
    )
    result = _answer(report, 0)
    assert result["isError"] is False, _text(result)
    prompts = report["results"][0]["elicitations"]
    assert len(prompts) == 2
    assert 'entry: "one"' in prompts[0]
    assert 'entry: "two"' in prompts[1]
    assert ledger_entries(tmp_path) == ["one", "two"]


@pytest.mark.parametrize(
    ("answer", "expected"), [("decline", "the user declined"), ("none", "cannot ask the user")]
)
async def test_a_refusal_in_the_typescript_client_leaves_the_child_untouched(
    tmp_path: Path, answer: Elicitation, expected: str
) -> None:
    report = await run_ts_client(
        gateway_script(_ledger_config(tmp_path), execute(APPEND_TWICE), elicitation=answer)
    )
    result = _answer(report, 0)
    assert result["isError"] is True
    assert expected in _text(result)
    assert ledger_entries(tmp_path) == []
