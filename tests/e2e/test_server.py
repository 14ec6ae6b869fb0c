"""End to end: the SDK client drives the real gateway process over stdio, against real children.

One gateway process serves the whole module: time and git (PyPI), everything, memory and filesystem
(npm, pinned), a child that cannot start, and a remote child over streamable HTTP on loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.e2e.gateway_process import gateway_args, search_docs, settled
from tests.real_servers import TINY_SERVER, built, npm_entry_point, serve_asgi_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit and one untracked file; also the filesystem server's root."""
    repo = tmp_path_factory.mktemp("workspace")
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True, timeout=30)
    (repo / "notes.md").write_text("# Notes\nship it\n", encoding="utf-8")
    subprocess.run([*git, "add", "notes.md"], check=True, timeout=30)
    subprocess.run([*git, "commit", "--quiet", "-m", "first commit"], check=True, timeout=30)
    (repo / "draft.txt").write_text("untracked\n", encoding="utf-8")
    return repo


def npm(package: str, *args: str) -> dict[str, Any]:
    return {"command": "node", "args": [str(npm_entry_point(package)), *args]}


@pytest.fixture(scope="module")
async def session(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with the gateway process."""
    build_tiny = built(TINY_SERVER)
    async with serve_asgi_app(build_tiny().streamable_http_app()) as (port, _):
        config = {
            "mcpServers": {
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
                "git": {
                    "command": sys.executable,
                    "args": ["-m", "mcp_server_git", "--repository", str(workspace)],
                },
                "everything": npm("@modelcontextprotocol/server-everything"),
                "memory": npm("@modelcontextprotocol/server-memory"),
                "filesystem": npm("@modelcontextprotocol/server-filesystem", str(workspace)),
                "broken": {"command": "/nonexistent/mcp-server"},
                "remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
            },
            "sandbox": {"timeout_seconds": 20},
        }
        config_file = tmp_path_factory.mktemp("config") / "gateway.json"
        config_file.write_text(json.dumps(config), encoding="utf-8")
        params = StdioServerParameters(
            command=sys.executable,
            args=gateway_args("serve", "--config", str(config_file)),
            env={"MEMORY_FILE_PATH": str(tmp_path_factory.mktemp("memory") / "memory.jsonl")},
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(60):
                await client.initialize()
            await settled(client)
            yield client


async def call(session: ClientSession, tool: str, **arguments: Any) -> types.CallToolResult:
    with anyio.fail_after(120):
        return await session.call_tool(tool, arguments)


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def run(session: ClientSession, code: str) -> dict[str, Any]:
    """The full record of a run (asked for with `details`)."""
    result = await call(session, "execute_code", code=code, details=True)
    assert isinstance(result.structured_content, dict), text(result)
    return result.structured_content


async def test_the_client_sees_exactly_two_tools_in_under_4_kb(session: ClientSession) -> None:
    with anyio.fail_after(30):
        listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == ["search_docs", "execute_code"]
    size = len(
        json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools])
    )
    assert size < 4096
    execute = listed.tools[1]
    assert execute.output_schema is None  # its results are text: every client shows the model the same
    assert "code" in execute.input_schema["properties"]


async def test_the_overview_lists_every_server_with_its_state(session: ClientSession) -> None:
    overview = await search_docs(session)
    for server in ("time", "git", "everything", "memory", "filesystem", "remote"):
        assert server in overview
    assert "broken" in overview
    assert "failed" in overview
    assert "get_current_time" in overview


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("current time in a timezone", "time.get_current_time"),
        ("convert time between timezones", "time.convert_time"),
        ("commit history", "git.git_log"),
        ("show staged changes diff", "git.git_diff_staged"),
        ("add two numbers", "everything.get_sum"),
        ("create entities in the knowledge graph", "memory.create_entities"),
        ("read a text file", "filesystem.read_text_file"),
        ("list directory contents", "filesystem.list_directory"),
        ("echo text back", "remote.echo"),
    ],
)
async def test_search_ranks_the_expected_tool_in_the_top_three(
    session: ClientSession, query: str, expected: str
) -> None:
    found = await search_docs(session, query, limit=3, detail="names")
    assert expected in found, found


async def test_a_snippet_chains_calls_across_children_and_computes_on_them(
    session: ClientSession, workspace: Path
) -> None:
    code = f"""
now = tools.time.get_current_time(timezone="Europe/Paris")
tools.memory.create_entities(entities=[
    {{"name": "release", "entityType": "event", "observations": ["planned " + now["datetime"][:10]]}}])
graph = tools.memory.read_graph()
status = tools.git.git_status(repo_path={str(workspace)!r})
total = tools.everything.get_sum(a=20, b=22)
{{"tz": now["timezone"], "entities": [e["name"] for e in graph["entities"]],
  "untracked_draft": "draft.txt" in str(status), "sum": total}}
"""
    outcome = await run(session, code)
    assert outcome["ok"], outcome["error"]
    value = outcome["value"]
    assert value["tz"] == "Europe/Paris"
    assert "release" in value["entities"]
    assert value["untracked_draft"] is True
    assert "42" in json.dumps(value["sum"])
    assert [call["tool"] for call in outcome["tool_calls"]] == [
        "time.get_current_time",
        "memory.create_entities",
        "memory.read_graph",
        "git.git_status",
        "everything.get_sum",
    ]


async def test_a_childs_error_is_caught_inside_the_snippet(session: ClientSession) -> None:
    code = """
try:
    tools.filesystem.read_text_file(path="/etc/passwd")
    outcome = "read it"
except ToolError as exc:
    outcome = "refused: " + str(exc)
outcome
"""
    outcome = await run(session, code)
    assert outcome["ok"], outcome["error"]
    assert outcome["value"].startswith("refused: ")
    assert "denied" in outcome["value"].lower() or "outside" in outcome["value"].lower()


async def test_a_schema_violation_names_the_field_and_the_rule(session: ClientSession) -> None:
    outcome = await run(session, "tools.everything.get_sum(a='twenty', b=22)")
    assert outcome["error"]["type"] == "ToolError"
    message = outcome["error"]["message"]
    assert "a:" in message
    assert "type" in message
    assert outcome["tool_calls"] == [] or outcome["tool_calls"][0]["ok"] is False


async def test_an_unknown_argument_is_refused_with_the_expected_names(session: ClientSession) -> None:
    outcome = await run(session, "tools.time.get_current_time(time_zone='UTC')")
    assert "unknown argument" in outcome["error"]["message"]
    assert "timezone" in outcome["error"]["message"]


async def test_an_unknown_tool_gets_did_you_mean_suggestions(session: ClientSession) -> None:
    outcome = await run(session, "tools.time.get_current_tme(timezone='UTC')")
    assert outcome["error"]["type"] == "ToolError"
    assert "time.get_current_time" in outcome["error"]["message"]
    unknown_server = text(await call(session, "search_docs", query="x", server="tme"))
    assert "time" in unknown_server


async def test_a_child_that_failed_to_start_is_reported_while_the_others_serve(
    session: ClientSession,
) -> None:
    outcome = await run(session, "tools.broken.anything()")
    assert outcome["error"]["type"] == "ToolError"
    assert "broken" in outcome["error"]["message"]
    assert "failed" in outcome["error"]["message"]
    assert (await run(session, "tools.everything.echo(message='still here')"))["ok"]


async def test_a_remote_child_over_streamable_http_answers(session: ClientSession) -> None:
    outcome = await run(session, "tools.remote.echo(text='over http')")
    assert outcome["ok"], outcome["error"]
    assert outcome["value"] == "over http" or "over http" in json.dumps(outcome["value"])


async def test_images_become_blobs_without_base64_in_the_output(session: ClientSession) -> None:
    code = """
result = tools.everything.get_tiny_image()
blobs = [item for item in (result if isinstance(result, list) else [result]) if isinstance(item, Blob)]
print(blobs)
[blobs[0].mime_type, blobs[0].size == len(blobs[0].data)]
"""
    outcome = await run(session, code)
    assert outcome["ok"], outcome["error"]
    assert outcome["value"] == ["image/png", True]
    assert "<Blob image image/png" in outcome["stdout"]
    assert "iVBOR" not in outcome["stdout"]  # the PNG signature in base64


async def test_a_failing_snippet_is_an_error_result_with_its_traceback(session: ClientSession) -> None:
    result = await call(session, "execute_code", code="x = 1\nx / 0")
    assert result.is_error
    assert 'File "<snippet>", line 2' in text(result)
    assert text(result).endswith("ZeroDivisionError: division by zero")
    assert result.structured_content is None


async def test_bad_execute_code_arguments_get_a_clear_error(session: ClientSession) -> None:
    result = await call(session, "execute_code", source="print(1)")
    assert result.is_error
    assert "code is required" in text(result)
    assert (await run(session, "print('next')"))["stdout"] == "next\n"
