"""Names and URIs a rule judges, through the real gateway process and a real SDK MCPServer child: a
URI is judged in the form the child reads it, and a rule keeps meaning the tool it was written for."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import ClientSession

from gateway.escape.probe_server import build as build_probe
from tests.e2e.gateway_process import execute, overview_once, session, write_config
from tests.e2e.http_children import http_children

pytestmark = pytest.mark.anyio

# The escape suite's probe: an SDK MCPServer with the template `repo://{owner}/{repo}/{name}`, whose
# parameters the SDK percent-decodes; with `shift`, a server whose `grow()` adds a tool to its list.
SHIFT = {"command": sys.executable, "args": ["-m", "gateway.escape.probe_server", "shift"]}


def _caught(expression: str) -> str:
    return f"try:\n    caught = {expression}\nexcept ToolError as e:\n    caught = [e.kind, str(e)]\ncaught"


def _reads(*uris: str) -> str:
    """Snippet: each read's value, or its ToolError as [kind, message]."""
    lines = "\n".join(f"out.append(read({uri!r}))" for uri in uris)
    return (
        "def read(uri):\n    try:\n        return resources.probe.read(uri)\n"
        "    except ToolError as e:\n        return [e.kind, str(e)]\nout = []\n" + lines + "\nout"
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway serves the tests whose rules and children it holds."""
    return "asyncio"


@pytest.fixture(scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ClientSession]:
    """probe with rules on its URIs, and shift with a deny written when `drop-all` was its only
    `drop_all`."""
    policy = {
        "hidden": ["probe:repo://acme/secrets/*"],
        "deny": ["probe:repo://acme/private/*", "shift.drop_all"],
    }
    # probe is served over HTTP from this process (a child process costs about a CPU-second); shift
    # stays a stdio child, whose list_changed the gateway hears at once.
    async with http_children({"probe": build_probe}) as probe:
        servers = {"shift": SHIFT, **probe}
        config = write_config(tmp_path_factory.mktemp("names"), {"mcpServers": servers, "policy": policy})
        async with session(config) as client:
            yield client


async def test_a_percent_escaped_uri_is_judged_in_the_form_the_child_reads(shared: ClientSession) -> None:
    code = _reads(
        "repo://acme/public/readme",
        "repo://acme/%73ecrets/key",
        "repo://%61cme/secrets/key",
        "repo://acme/%70rivate/key",
        "repo://acme%2Fsecrets/key/x",
    )
    public, escaped, authority, denied, slash = (await execute(shared, code))["value"]
    serves = await execute(shared, "resources.probe.read('repo://acme/public/next')")
    assert public == "contents of acme/public/readme"
    absent = "no resource 'repo://acme/secrets/key' on probe"
    assert escaped[0] == authority[0] == "ToolError"
    assert escaped[1].startswith(absent)
    assert authority[1].startswith(absent)
    assert denied == [
        "PolicyDenied",
        'probe:repo://acme/private/key is denied by policy (deny: "probe:repo://acme/private/*")',
    ]
    assert slash[0] == "ToolError"
    assert "the percent-escape '%2F' (for '/')" in slash[1]
    assert serves["value"] == "contents of acme/public/next"


_EVERY_NAME = """
answers = []
for name in ('shift.drop-all', 'shift.drop_all_2', 'shift.drop_all'):
    try:
        answers.append(call_tool(name))
    except ToolError as e:
        answers.append(str(e))
answers
"""


async def test_a_tool_list_change_that_would_move_a_deny_blocks_the_server_saying_why(
    shared: ClientSession,
) -> None:
    # The deny was written when `drop-all` (destructive) was the server's only `drop_all`.
    before = await execute(shared, "call_tool('shift.drop-all')")
    grown = await execute(shared, "tools.shift.grow()")
    overview = await overview_once(shared, "shift (blocked")
    after = (await execute(shared, _EVERY_NAME))["value"]
    serves = await execute(shared, "tools.probe.echo(text='still here')")
    assert 'denied by policy (deny: "shift.drop_all")' in before["error"]["message"]
    assert grown["value"] == {"result": "grown"}
    assert (
        'shift (blocked: policy.deny ("shift.drop_all") tells apart its tools "drop-all" (shift.drop_all_2) '
        'and "drop_all" (shift.drop_all)'
    ) in overview
    assert len(after) == 3
    assert all(answer.startswith("server 'shift' is blocked") for answer in after), after
    assert serves["value"] == {"result": "still here"}


async def test_rules_that_treat_both_alike_keep_the_server_reachable_after_the_change(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"shift": SHIFT}, "policy": {"deny": ["shift.drop_all*"]}})
    async with session(config) as client:
        await execute(client, "tools.shift.grow()")
        await overview_once(client, "shift (ready, 3 tools)")
        after = (await execute(client, _EVERY_NAME))["value"]
        grow = await execute(client, "tools.shift.grow()")
    assert len(after) == 3
    assert all("is denied by policy" in answer for answer in after), after
    assert grow["value"] == {"result": "grown"}
