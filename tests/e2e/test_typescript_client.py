"""The real gateway process, driven by the official TypeScript MCP SDK client (tests/e2e/ts_client).

The client runs one script against one gateway for most of the module (its report is shared, each
test reads its own steps); a client that cannot be asked for approval has a gateway of its own. The
ledger child is served over HTTP from the test process (the gateway is the process under test).
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gateway_process import ledger_entries, write_config
from tests.e2e.http_children import ledger_over_http
from tests.e2e.ts_client import call, execute, gateway_script, run_ts_client

pytestmark = pytest.mark.anyio

# A child call with a known answer: the ledger is still empty when the first steps run it.
ENTRIES = "tools.ledger.entries()"
APPEND_TWICE = "print(tools.ledger.append(entry='one'))\nprint(tools.ledger.append(entry='two'))\n'done'"
APPEND_DECLINED = (
    "print(tools.ledger.append(entry='three'))\nprint(tools.ledger.append(entry='four'))\n'done'"
)

# The steps of the shared script, by what each is for.
PLAIN, DETAILED, FAILING, PROGRESS, APPROVED, DECLINED, ABORTED, NEXT = range(8)


def _config(directory: Path, children: dict[str, Any]) -> Path:
    # One slot and an hour's budget: a snippet still sleeping after the cancel would hold the next call
    # past the client's own request timeout and the test's bound, not a little longer.
    config = {
        "mcpServers": children,
        "policy": {"approve": ["ledger.append"]},
        "sandbox": {"max_concurrent_executions": 1, "timeout_seconds": 3600},
    }
    return write_config(directory, config)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that the one client run below serves every test that reads it."""
    return "asyncio"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared run's config and ledger."""
    return tmp_path_factory.mktemp("ts_client")


@pytest.fixture(scope="module")
async def report(workdir: Path) -> dict[str, Any]:
    """The report of one script whose user approves every call, but declines during DECLINED."""
    steps = {
        PLAIN: execute(ENTRIES),
        DETAILED: call("execute_code", {"code": ENTRIES, "details": True}),
        FAILING: execute("x = 1\n1/0"),
        PROGRESS: execute("import time; time.sleep(2.5)", progress=True),
        APPROVED: execute(APPEND_TWICE),
        DECLINED: execute(APPEND_DECLINED, elicitation="decline"),
        ABORTED: execute("import time; time.sleep(3000)", progress=True, cancel_after_ms=1000),
        NEXT: execute("'next'"),
    }
    async with ledger_over_http(workdir) as children:
        script = gateway_script(
            _config(workdir, children), *(steps[i] for i in sorted(steps)), elicitation="accept"
        )
        return await run_ts_client(script)


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def _answer(report: dict[str, Any], index: int) -> dict[str, Any]:
    """The CallToolResult of step `index`, which the SDK accepted (no error, no schema mismatch)."""
    outcome = report["results"][index]
    assert outcome["error"] is None, f"{outcome['error']}\ngateway log:\n{report['stderr']}"
    assert outcome["result"] is not None
    return outcome["result"]


async def test_the_typescript_client_sees_exactly_the_two_tools_and_negotiates_its_newest_protocol(
    report: dict[str, Any],
) -> None:
    assert sorted(report["tools"]) == ["execute_code", "search_docs"]
    assert report["sdkVersion"] == "1.32.2"  # the Makefile's pin
    assert report["protocolVersion"] == report["latestProtocolVersion"], report["supportedProtocolVersions"]
    assert report["serverInfo"]["name"] == "codemode-gateway"


async def test_execute_codes_result_reaches_the_typescript_client_as_the_value_alone(
    report: dict[str, Any],
) -> None:
    assert "execute_code" not in report["outputSchemaTools"]  # nothing for a client to check it against
    plain, detailed = _answer(report, PLAIN), _answer(report, DETAILED)
    assert plain["isError"] is False
    assert plain["content"] == [{"type": "text", "text": "{'result': []}"}]
    assert "structuredContent" not in plain
    assert detailed["structuredContent"]["value"] == {"result": []}
    assert [c["tool"] for c in detailed["structuredContent"]["tool_calls"]] == ["ledger.entries"]
    assert json.loads(_text(detailed)) == detailed["structuredContent"]


async def test_a_failing_snippet_comes_back_as_is_error_with_its_own_traceback(
    report: dict[str, Any],
) -> None:
    result = _answer(report, FAILING)
    assert result["isError"] is True
    text = _text(result)
    assert 'File "<snippet>", line 2' in text
    assert "1/0" in text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "structuredContent" not in result


async def test_progress_notifications_of_a_long_snippet_strictly_increase(report: dict[str, Any]) -> None:
    assert _answer(report, PROGRESS)["isError"] is False
    notes = report["results"][PROGRESS]["progress"]
    values = [note["progress"] for note in notes]
    assert len(values) >= 2, notes
    assert all(a < b for a, b in pairwise(values)), notes


async def test_an_aborted_call_returns_at_once_and_the_next_call_is_served(report: dict[str, Any]) -> None:
    aborted = report["results"][ABORTED]
    assert aborted["result"] is None
    assert "aborted by the script after 1000 ms" in aborted["error"]
    assert _text(_answer(report, NEXT)) == "'next'"


async def test_the_typescript_clients_user_approves_each_call_and_each_reaches_the_child_once(
    report: dict[str, Any], workdir: Path
) -> None:
    result = _answer(report, APPROVED)
    assert result["isError"] is False, _text(result)
    prompts = report["results"][APPROVED]["elicitations"]
    assert len(prompts) == 2
    assert 'entry: "one"' in prompts[0]
    assert 'entry: "two"' in prompts[1]
    assert ledger_entries(workdir) == ["one", "two"]  # and nothing of the declined step's


async def test_a_decline_in_the_typescript_client_leaves_the_child_untouched(
    report: dict[str, Any], workdir: Path
) -> None:
    result = _answer(report, DECLINED)
    assert result["isError"] is True
    assert "the user declined" in _text(result)
    assert report["results"][DECLINED]["elicitations"]  # the user was asked, and said no
    assert not {"three", "four"} & set(ledger_entries(workdir))


async def test_a_typescript_client_that_cannot_be_asked_leaves_the_child_untouched(tmp_path: Path) -> None:
    async with ledger_over_http(tmp_path) as children:
        config = write_config(tmp_path, {"mcpServers": children, "policy": {"approve": ["ledger.append"]}})
        report = await run_ts_client(gateway_script(config, execute(APPEND_TWICE), elicitation="none"))
    result = _answer(report, 0)
    assert result["isError"] is True
    assert "cannot ask the user" in _text(result)
    assert ledger_entries(tmp_path) == []
