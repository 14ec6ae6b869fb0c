"""The team policy, end to end: the real gateway process, real children, a real SDK client."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.e2e.gateway_process import LEXICAL_SEARCH, gateway_args, search_docs
from tests.real_servers import npm_entry_point

pytestmark = pytest.mark.anyio

POLICY = {
    "deny": ["everything.get_env"],
    "hidden": ["memory.delete_*"],
    "approve": ["memory.create_entities"],
    "tools": {"everything.get_sum": {"args": {"properties": {"a": {"maximum": 100}}}, "max_calls": 2}},
}


def _config(tmp_path: Path, policy: dict[str, Any], only: tuple[str, ...] = ()) -> Path:
    """The two children the policy names (both under node) under `policy`; with `only`, just those of
    them."""
    node = "node"
    config = {
        "mcpServers": {
            "everything": {
                "command": node,
                "args": [str(npm_entry_point("@modelcontextprotocol/server-everything"))],
            },
            "memory": {
                "command": node,
                "args": [str(npm_entry_point("@modelcontextprotocol/server-memory"))],
                "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
            },
        },
        "policy": policy,
        **LEXICAL_SEARCH,
    }
    if only:
        config["mcpServers"] = {name: config["mcpServers"][name] for name in only}
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class Approvals:
    """The user at the client: answers each approval request and remembers what it was shown."""

    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": self.approve})


@asynccontextmanager
async def gateway(config: Path, approvals: Approvals | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=gateway_args("serve", "--config", str(config))
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=approvals) as session,
    ):
        with anyio.fail_after(60):
            await session.initialize()
        yield session


async def run(session: ClientSession, code: str) -> dict[str, Any]:
    with anyio.fail_after(120):
        result = await session.call_tool("execute_code", {"code": code, "details": True})
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_of(outcome: dict[str, Any]) -> str:
    assert outcome["error"] is not None, outcome
    return f"{outcome['error']['type']}: {outcome['error']['message']}"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway per policy and client kind serves the tests that need it."""
    return "asyncio"


@pytest.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ClientSession]:
    """The team policy, and a client that cannot be asked for approval."""
    async with gateway(_config(tmp_path_factory.mktemp("policy"), POLICY)) as client:
        yield client


async def test_policy_denies_hides_constrains_and_rations_tools(session: ClientSession) -> None:
    denied = await run(session, "tools.everything.get_env()")
    assert "denied by policy" in error_of(denied)

    hidden = error_of(await run(session, "tools.memory.delete_entities(entityNames=['x'])"))
    # Refused before the run (its calls are checked first), exactly as the call would be.
    assert hidden.startswith("ToolError: the snippet was not run")
    assert "line 1: unknown tool 'memory.delete_entities'" in hidden
    assert "policy" not in hidden
    assert "delete_" not in hidden.split("unknown tool 'memory.delete_entities'")[1]
    listing = await search_docs(session, "delete entities")
    assert "Still starting" not in listing  # the child listed the tools the policy hides
    assert "delete_entities" not in listing

    over_max = await run(session, "tools.everything.get_sum(a=150, b=1)")
    assert "maximum" in error_of(over_max)

    rationed = await run(
        session,
        "out = []\nfor i in range(3):\n"
        "    try:\n        out.append(str(tools.everything.get_sum(a=i, b=1)))\n"
        "    except ToolError as e:\n        out.append('refused: ' + str(e))\nout",
    )
    assert rationed["ok"], rationed
    assert rationed["value"][2].startswith("refused: ")
    assert "max_calls" in rationed["value"][2]


async def test_a_marked_tool_runs_only_when_the_user_approves_that_exact_call(tmp_path: Path) -> None:
    code = "tools.memory.create_entities(entities=[{'name': 'N1', 'entityType': 't', 'observations': []}])"
    user = Approvals(approve=True)
    policy = {"approve": POLICY["approve"]}  # memory alone: the rules this test reads
    async with gateway(_config(tmp_path, policy, only=("memory",)), user) as client:
        assert (await run(client, code))["ok"]
        assert len(user.asked) == 1
        assert "memory.create_entities" in user.asked[0]
        assert '"N1"' in user.asked[0]
        user.approve = False  # the same call again: asked again, declined this time
        outcome = await run(client, code)
        assert len(user.asked) == 2
        assert "declined" in error_of(outcome)


async def test_a_client_without_elicitation_gets_a_clear_refusal_not_a_silent_call(
    session: ClientSession,
) -> None:
    outcome = await run(
        session,
        "tools.memory.create_entities(entities=[{'name': 'N2', 'entityType': 't', 'observations': []}])",
    )
    assert "cannot ask the user" in error_of(outcome)
    graph = await run(session, "tools.memory.read_graph()")
    assert "N2" not in json.dumps(graph["value"])


async def test_execute_codes_annotations_follow_what_the_policy_lets_it_reach(tmp_path: Path) -> None:
    # memory alone: tools that read and tools that write.
    async with gateway(_config(tmp_path, {"read_only": True}, only=("memory",))) as session:
        await run(session, "1")  # children connected: the catalog is complete
        with anyio.fail_after(30):
            tools = (await session.list_tools()).tools
        annotations = tools[1].annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
        assert annotations.destructive_hint is False
    async with gateway(_config(tmp_path, {}, only=("memory",))) as session:
        await run(session, "1")
        with anyio.fail_after(30):
            annotations = (await session.list_tools()).tools[1].annotations
        assert annotations is not None
        assert annotations.read_only_hint is False
        assert annotations.destructive_hint is True
