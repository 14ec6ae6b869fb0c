"""`serve`, `check` and `exec` with children after `--`, run as the real command."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.cli.command import WAIT, Commands
from tests.e2e.gateway_process import environment, execute, search_docs
from tests.real_servers import TINY_SERVER, built, npm_entry_point, serve_asgi_app

pytestmark = pytest.mark.anyio

TINY = ["tiny", sys.executable, str(TINY_SERVER)]


def everything() -> list[str]:
    """server-everything under node, as a command-line child: where any child will do, a Node one starts
    for a fraction of a Python one's CPU."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; the npm child servers need Node 20")
    return ["everything", node, str(npm_entry_point("@modelcontextprotocol/server-everything"))]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one `check` run serves the tests that read it."""
    return "asyncio"


@dataclass
class Checked:
    """`check` with children given only on the command line: everything over stdio (any child that
    connects will do), and remote over HTTP with a header naming a variable."""

    code: int
    out: str
    err: str
    seen: list[dict[str, str]]  # the headers of every request remote got


@pytest.fixture(scope="module")
async def checked(commands: Commands) -> Checked:
    build = built(TINY_SERVER)
    async with serve_asgi_app(build().streamable_http_app()) as (port, seen):
        url = f"http://127.0.0.1:{port}/mcp"
        header = "Authorization: Bearer ${CHILD_TOKEN}"
        env = {"CHILD_TOKEN": "tok-123"}
        remote = ["remote", "--transport", "http", url, "-H", header]
        code, out, err = await commands.run("check", "--", *everything(), "--", *remote, env=env)
    return Checked(code, out, err, seen)


async def test_check_connects_to_children_given_only_on_the_command_line(checked: Checked) -> None:
    assert checked.code == 0, checked.err
    assert "children from the command line: everything, remote" in checked.out
    assert any(line.split()[:3] == ["everything", "stdio", "ready"] for line in checked.out.splitlines())


async def test_the_command_line_replaces_the_config_files_entry_of_the_same_name(
    tmp_path: Path, commands: Commands
) -> None:
    config = tmp_path / "team.json"
    config.write_text(
        json.dumps({"mcpServers": {"everything": {"command": "/nonexistent/server"}}}), encoding="utf-8"
    )
    code, out, err = await commands.run("check", "--config", str(config), "--", *everything())
    assert code == 0, err  # the file's broken entry was replaced, so every child connected
    assert "(replacing the config file's everything)" in out


async def test_an_http_child_gets_its_headers_with_variables_expanded(checked: Checked) -> None:
    assert checked.code == 0, checked.err
    assert any(line.split()[:3] == ["remote", "http", "ready"] for line in checked.out.splitlines())
    assert {request.get("authorization") for request in checked.seen} == {"Bearer tok-123"}


async def test_exec_runs_a_snippet_against_children_given_on_the_command_line(commands: Commands) -> None:
    snippet = "print(tools.everything.echo(message='hi'))"
    code, out, err = await commands.run("exec", "-c", snippet, "--", *everything())
    assert code == 0, err
    assert "Echo: hi" in out


async def test_serve_answers_search_docs_and_execute_code_over_command_line_children() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--", *everything()], env=environment()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        with anyio.fail_after(WAIT):
            await client.initialize()
        overview = await search_docs(client)
        result = await execute(client, "tools.everything.echo(message='over stdio')")
    assert "everything (ready" in overview
    assert "over stdio" in json.dumps(result)


async def test_a_malformed_child_is_a_usage_error_naming_what_to_write(commands: Commands) -> None:
    with anyio.fail_after(WAIT):
        code, _, err = await commands.run("check", "--", "tiny")
    assert code == 2
    assert "child 'tiny' has no command" in err


async def test_a_command_that_takes_no_children_says_which_do(commands: Commands) -> None:
    code, _, err = await commands.run("schema", "--", *TINY)
    assert code == 2
    assert "taken by serve, check, exec" in err
