"""What the model reads from search_docs and help(), in the real gateway process over real children:
honest return types, the shapes of results it has seen, a child's own instructions, and no stamp.

Also search_docs under hostile queries: refused past the cap.

One gateway serves the module: git and time (PyPI), the reference `everything` server (npm), the
tiny test server (whose `plain_echo` hands back any JSON the snippet gives it, as text the gateway
parses, declaring no output schema), and the catalog server, whose one tool only the test of a
changing schema calls and changes.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession

from gateway.catalog._render import STILL_STARTING
from gateway.catalog._semantic import semantic_installed
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from tests.e2e.gateway_http import HttpGateway, http_client, http_gateway
from tests.e2e.gateway_process import (
    TINY,
    environment,
    execute,
    ledger_server,
    search_docs,
    session,
    settled,
    text,
    write_config,
)
from tests.real_servers import CATALOG_SERVER, gated, npm_entry_point

pytestmark = pytest.mark.anyio

WAIT = 120  # real child servers start in seconds; this bounds a hang, not a race


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit."""
    path = tmp_path_factory.mktemp("repo")
    git = ["git", "-C", str(path), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "--quiet", str(path)], check=True, timeout=30)
    (path / "notes.md").write_text("ship it\n", encoding="utf-8")
    subprocess.run([*git, "add", "notes.md"], check=True, timeout=30)
    subprocess.run([*git, "commit", "--quiet", "-m", "first commit"], check=True, timeout=30)
    return path


REPORT = {"name": "report", "description": "Writes a report.", "inputSchema": {"type": "object"}}
"""The catalog server's one tool, as the module's gateway starts."""


@pytest.fixture(scope="module")
def catalog_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog server's tools, which it reads again on every tools/list."""
    path = tmp_path_factory.mktemp("catalog") / "tools.json"
    path.write_text(json.dumps([REPORT]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
async def client(
    repo: Path, catalog_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ClientSession]:
    everything = str(npm_entry_point("@modelcontextprotocol/server-everything"))
    catalog = {
        "command": sys.executable,
        "args": [str(CATALOG_SERVER)],
        "env": {"CATALOG_FILE": str(catalog_file)},
    }
    config = {
        "mcpServers": {
            "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
            "everything": {"command": "node", "args": [everything]},
            "tiny": {**TINY, "env": {"TINY_PLAIN_ECHO": "1"}},
            "catalog": catalog,
        }
    }
    path = write_config(tmp_path_factory.mktemp("config"), config, default_search=True)
    async with session(path) as connected:
        await settled(connected)
        yield connected


def _commit_hash(repo: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, timeout=30, capture_output=True
    )
    return done.stdout.decode().strip()


async def test_the_overview_carries_no_config_stamp_and_names_the_server_with_instructions(
    client: ClientSession,
) -> None:
    overview = await search_docs(client)
    assert "Config" not in overview
    assert overview.split("\n")[-1] == (
        'Usage instructions from everything: search_docs(server="<name>") shows them.'
    )


async def test_a_childs_instructions_are_shown_where_the_model_looks_at_that_server(
    client: ClientSession,
) -> None:
    listing = await search_docs(client, server="everything", limit=1)
    instructions = listing.split("Instructions from the everything server:\n", 1)[1]
    assert instructions.startswith("  # Everything Server")
    assert "## Operational Patterns" in instructions
    outcome = await execute(client, "help(tools.everything)")
    assert "Instructions from the everything server:\n  # Everything Server" in outcome["stdout"]
    assert "search_docs" not in outcome["stdout"].split("Instructions from")[0]  # no hint to the snippet
    assert "nstructions" not in await search_docs(client, server="git")  # git gives none


async def test_a_tool_without_output_schema_returns_any_until_a_call_shows_its_shape(
    client: ClientSession, repo: Path
) -> None:
    before = (await search_docs(client, "git log", limit=1)).split("\n")[1]
    assert before.endswith(") -> Any  # Shows the commit logs")
    outcome = await execute(
        client, f"log = tools.git.git_log(repo_path={str(repo)!r})\nprint(type(log).__name__)"
    )
    assert outcome["stdout"] == "str\n"
    after = (await search_docs(client, "git log", limit=1)).split("\n")[1]
    assert after.endswith(") -> str  # (observed) Shows the commit logs")
    doc = (await execute(client, "help(tools.git.git_log)"))["stdout"]
    assert "observed return type (not declared)" in doc
    assert _commit_hash(repo) not in after + doc


async def test_an_observed_shape_shows_field_names_and_types_never_values(client: ClientSession) -> None:
    await execute(client, "tools.everything.get_resource_links(count=2)")
    doc = (await execute(client, "help(tools.everything.get_resource_links)"))["stdout"]
    head = doc.split("\n")[0]
    assert head.endswith(
        "-> list[str | {'name': str, 'uri': str, 'description': str, 'mimeType': str, 'type': str}]"
    )
    assert "demo://" not in doc
    assert "Resource 1" not in doc


async def test_keys_that_are_data_never_reach_a_signature(client: ClientSession) -> None:
    data = {"ann@example.com": {"balance": 1234567}, "/home/bob/ledger.txt": {"balance": 7654321}}
    outcome = await execute(client, f"tools.tiny.plain_echo(text={json.dumps(data)!r})")
    assert outcome["ok"], outcome
    line = (await search_docs(client, "plain_echo", server="tiny", limit=1)).split("\n")[1]
    assert line.startswith("tiny.plain_echo(*, text: str) -> dict[str, {'balance': int}]  # (observed)")
    shown = line + (await execute(client, "help(tools.tiny.plain_echo)"))["stdout"]
    assert not any(secret in shown for secret in ("ann@example.com", "/home/bob", "1234567", "7654321"))
    assert (await execute(client, "tools.time.get_current_time(timezone='UTC')"))["ok"]  # still serving


async def test_a_tools_schema_change_drops_its_observed_shape(
    client: ClientSession, catalog_file: Path
) -> None:
    assert (await execute(client, "tools.catalog.report()"))["value"] == "report answered"
    observed = await search_docs(client, "report", server="catalog", limit=1)
    assert "catalog.report() -> str  # (observed) Writes a report." in observed
    changed = {**REPORT, "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}
    await anyio.Path(catalog_file).write_text(json.dumps([changed]), encoding="utf-8")
    await execute(client, "tools.catalog.announce()")
    with anyio.fail_after(WAIT):
        while "title" not in (shown := await search_docs(client, "report", server="catalog", limit=1)):  # noqa: ASYNC110 (another process lists)
            await anyio.sleep(0.05)
    assert "catalog.report(*, title: str = None) -> Any  # Writes a report." in shown


ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40


async def test_another_caller_sees_neither_the_shape_of_a_callers_results_nor_a_hidden_tool_in_instructions(
    tmp_path: Path,
) -> None:
    tiny = {
        **TINY,
        "env": {"TINY_PLAIN_ECHO": "1", "TINY_INSTRUCTIONS": "Call env to debug, echo for the rest."},
    }
    config = {
        "mcpServers": {"tiny": tiny},
        "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
        "policy": {"roles": {"contractor": {"principals": ["bob"], "hidden": ["tiny.env"]}}},
    }
    data = {"ann@example.com": {"balance": 1234567, "iban": "DE02120300000000202051"}}
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    async with http_gateway(write_config(tmp_path, config, default_search=True), env=env) as gateway:
        async with http_client(gateway.url, token=ALICE) as alice:
            with anyio.fail_after(WAIT):
                code = f"tools.tiny.plain_echo(text={json.dumps(data)!r})"
                ran = await alice.call_tool("execute_code", {"code": code, "details": True})
                alices = text(await alice.call_tool("search_docs", {"query": "", "server": "tiny"}))
        async with http_client(gateway.url, token=BOB) as bob:
            with anyio.fail_after(WAIT):
                bobs = text(await bob.call_tool("search_docs", {"query": "", "server": "tiny"}))
                help_text = text(await bob.call_tool("execute_code", {"code": "help(tools.tiny)"}))
                still = await bob.call_tool("execute_code", {"code": "tools.tiny.echo(text='hi')"})
    assert ran.structured_content is not None
    assert ran.structured_content["ok"]
    shape = "-> dict[str, {'balance': int, 'iban': str}]  # (observed)"
    assert shape in alices
    assert "tiny.plain_echo(*, text: str) -> Any" in bobs  # shapes are kept per caller
    for seen in (bobs, help_text):
        assert "ann@example.com" not in seen
        assert "1234567" not in seen
        assert "DE0212" not in seen
        assert "nstructions" not in seen  # they name tiny.env, which bob's role hides
        assert "env" not in seen.replace("environment", "")
    assert "Instructions from the tiny server:\n  Call env to debug, echo for the rest." in alices
    assert not still.is_error
    assert text(still) == "{'result': 'hi'}"


async def test_a_servers_name_used_as_a_word_does_not_rank_that_servers_tools(client: ClientSession) -> None:
    answer = await search_docs(client, "undo everything I staged")
    tools = [line.split("(", 1)[0] for line in answer.splitlines()[1:] if "(" in line]
    assert "git.git_reset" in tools[:3]
    assert tools[0].startswith("git.")  # the failure this guards: the `everything` server's tools first
    named = await search_docs(client, "echo on the everything server")
    assert named.splitlines()[1].startswith("everything.echo(")


async def test_a_request_no_tool_serves_says_so_first_with_at_most_three_hints_and_search_still_serves(
    client: ClientSession,
) -> None:
    lines = (await search_docs(client, "book a table for two at 8pm")).splitlines()
    assert lines[0] == "No tool clearly fits; the nearest:"
    assert 3 <= len(lines) <= 5  # one to three hints, then what to try
    assert lines[-1].startswith("Did you mean") or lines[-1].startswith("Try other words")
    found = (await search_docs(client, "git log --oneline -n 5")).splitlines()
    assert found[0] == "5 tools, best first:"
    assert found[1].startswith("git.git_log(")


@pytest.mark.skipif(not semantic_installed(), reason="the search model or its runtime is not installed")
async def test_a_request_for_a_product_no_server_offers_names_it_and_search_still_serves(
    client: ClientSession,
) -> None:
    query = "open a ticket in Zendesk for the refund"
    with anyio.fail_after(60):  # searches are lexical until the gateway's model has loaded
        first = (await search_docs(client, query)).splitlines()[0]
        while "no server here knows" not in first:  # the gateway loads its model on a thread of its own
            await anyio.sleep(0.2)
            first = (await search_docs(client, query)).splitlines()[0]
    assert first == 'No tool clearly fits (no server here knows "Zendesk"); the nearest:'
    found = (await search_docs(client, "what time is it in Lisbon")).splitlines()
    assert "no server here knows" not in found[0]  # a place is not a product
    assert any(line.startswith("time.get_current_time(") for line in found[1:4])


_WAITING = "a search waits for the children still starting"


def _ledger_and_gated_tiny(directory: Path, wait_seconds: float = 10.0) -> Path:
    """A config whose ledger child starts at once and whose tiny child only once `directory/open` exists."""
    config = {
        "mcpServers": {"ledger": ledger_server(directory), "tiny": gated(TINY, directory / "open")},
        "startup_timeout_seconds": 600,
        "search": {"semantic": "off", "wait_seconds": wait_seconds},
    }
    return write_config(directory, config)


async def _until_waiting(gateway: HttpGateway, answers: list[str]) -> None:
    """Until the gateway logs that a search waits for children still starting, or `answers` has one
    (which would say it did not wait)."""
    with anyio.fail_after(WAIT):
        while True:
            if _WAITING in gateway.messages() or answers:
                return
            await anyio.sleep(0.02)


async def _ready(client: Client, server: str) -> None:
    """Once `server` is ready, asked of it alone: an overview would name the others still starting."""
    with anyio.fail_after(WAIT):
        while True:  # the client has no other way to see a child get ready
            if f"{server} (ready" in await search_docs(client, server=server, settled=False):
                return
            await anyio.sleep(0.05)


async def test_a_query_a_ready_childs_tool_fits_is_answered_at_once_naming_the_children_still_starting(
    tmp_path: Path,
) -> None:
    async with (
        http_gateway(_ledger_and_gated_tiny(tmp_path)) as gateway,
        http_client(gateway.url) as client,
    ):
        await _ready(client, "ledger")
        found = await search_docs(client, "append an entry to the ledger", settled=False)
        assert _WAITING not in gateway.messages()
    assert "ledger.append(" in found
    assert found.split("\n")[-1] == ("Still starting: tiny; the next search waits for it.")


async def test_after_an_answer_named_a_child_still_starting_the_next_overview_waits_for_it(
    tmp_path: Path,
) -> None:
    answers: list[str] = []

    async def ask(client: Client) -> None:
        answers.append(await search_docs(client, settled=False))

    async with (
        http_gateway(_ledger_and_gated_tiny(tmp_path, wait_seconds=600)) as gateway,
        http_client(gateway.url) as client,
    ):
        await _ready(client, "ledger")
        first = await search_docs(client, settled=False)  # answered at once, naming tiny
        assert _WAITING not in gateway.messages()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, client)
            await _until_waiting(gateway, answers)
            assert answers == []  # waiting for tiny this time
            (tmp_path / "open").touch()
    assert first.split("\n")[-1] == "Still starting: tiny; the next search waits for it."
    [second] = answers
    assert "tiny (ready, 3 tools)" in second
    assert STILL_STARTING not in second


async def test_a_query_no_ready_childs_tool_fits_waits_for_the_children_still_starting_and_finds_theirs(
    tmp_path: Path,
) -> None:
    answers: list[str] = []

    async def ask(client: Client) -> None:
        answers.append(await search_docs(client, "echo text unchanged", settled=False))

    # Waiting as long as the test may: tiny's start after the gate opens is never raced against the cap.
    async with (
        http_gateway(_ledger_and_gated_tiny(tmp_path, wait_seconds=600)) as gateway,
        http_client(gateway.url) as client,
    ):
        await _ready(client, "ledger")
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, client)
            await _until_waiting(gateway, answers)
            assert answers == []  # waiting for tiny, not answered without it
            (tmp_path / "open").touch()
    [found] = answers
    assert "tiny.echo(" in found
    assert STILL_STARTING not in found


async def test_a_query_waiting_for_a_child_that_never_starts_answers_at_search_wait_seconds_and_serves_on(
    tmp_path: Path,
) -> None:
    async with (
        http_gateway(_ledger_and_gated_tiny(tmp_path, wait_seconds=0.5)) as gateway,
        http_client(gateway.url) as client,
    ):
        await _ready(client, "ledger")
        waited = await search_docs(client, "echo text unchanged", settled=False)
        found = await search_docs(client, "append an entry to the ledger", settled=False)
        assert _WAITING in gateway.messages()
    assert "tiny.echo(" not in waited
    assert waited.split("\n")[-1] == ("Still starting: tiny; the next search waits for it.")
    assert "ledger.append(" in found


def _random_words(count: int, length: int) -> str:
    rng = random.Random(3)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(length)) for _ in range(count))


async def test_a_query_past_the_cap_is_refused_naming_the_limit_and_the_gateway_serves_on(
    client: ClientSession,
) -> None:
    with anyio.fail_after(WAIT):
        refused = await client.call_tool("search_docs", {"query": _random_words(12, 10_000)})
        at_cap = await client.call_tool("search_docs", {"query": _random_words(12, 82)})
        found = await search_docs(client, "echo")
    ran = await execute(client, "1 + 1")
    assert refused.is_error
    assert f"over search.max_query_chars ({DEFAULT_MAX_QUERY_CHARS:,})" in text(refused)
    assert len(text(refused)) < 300  # the query is not echoed back
    assert not at_cap.is_error
    assert "max_query_chars" not in text(at_cap)  # answered by search (lexical or by meaning), not refused
    assert "everything.echo" in found
    assert ran["ok"]
    assert ran["value"] == 2
