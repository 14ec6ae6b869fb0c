"""Honest mistakes fail closed or explain themselves, through the real gateway process.

A typo in a policy rule, an unset variable, a config holding the gateway's own entry, relative paths,
and configs written by other clients: each as a team would make it in its first hour.

Tests whose mistakes do not meet share a config, its `check` and one gateway serving it: a team
directory (a launcher, relative paths, an optional rule that matches nothing, entries as Cursor and
Claude Desktop write them), and a config whose broken entries (a rule with a typo, an unset variable,
a failing child with a secret, the gateway's own entry) each fail alone beside a working one.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import ClientSession

from tests.e2e.gateway_process import (
    EVERYTHING,
    TINY,
    cli,
    environment,
    execute,
    search_docs,
    session,
    write_config,
)
from tests.real_servers import TINY_SERVER

pytestmark = pytest.mark.anyio

UNSET = "CODEMODE_TEST_UNSET_VARIABLE"
SECRET = "s3cr3t-" + "token-value-1234567890"


@dataclass
class Checked:
    """A config, its environment, and what `check` said of it: exit code, stdout, stderr."""

    config: Path
    env: dict[str, str]
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def team_directory(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """A team's directory: a launcher for the tiny server under bin/ started in work/, the audit log
    under logs/, a deny rule marked optional that matches no tool, and keys of other clients (a
    disabled entry, an `autoApprove` list); checked."""
    root = tmp_path_factory.mktemp("paths")
    team = root / "team"
    (team / "bin").mkdir(parents=True)
    launcher = team / "bin" / "tiny"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {TINY_SERVER}\n", encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    (team / "work").mkdir()
    config = write_config(
        team,
        {
            "mcpServers": {
                "tiny": {"command": "./bin/tiny", "cwd": "work", "autoApprove": ["echo"]},
                "off": {**TINY, "disabled": True},
            },
            "audit": {"path": "logs/audit.jsonl"},
            "policy": {"deny": [{"pattern": "tiny.di", "optional": True}]},
        },
    )
    env = environment()
    return Checked(config, env, *await cli("check", "--config", str(config), env=env))


@pytest.fixture(scope="module")
async def team_client(team_directory: Checked) -> AsyncIterator[ClientSession]:
    """The gateway serving the team directory's config, started elsewhere."""
    elsewhere = team_directory.config.parent.parent / "elsewhere"
    elsewhere.mkdir()
    async with session(team_directory.config, env=team_directory.env, cwd=elsewhere) as client:
        yield client


@pytest.fixture(scope="module")
async def broken_entries(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """A working entry beside four broken ones, checked at INFO: a deny rule meant for `typo` matches
    none of its tools (any child will do for both: the Node one), `needy` names an unset variable,
    `failing` prints its secret token to stderr and exits, `codemode` runs the gateway."""
    needy = {**TINY, "env": {"TOKEN": "${" + UNSET + "}"}}
    failing = {
        "command": sys.executable,
        "args": [
            "-c",
            "import os, sys; print('auth failed for token', os.environ['API_TOKEN'], file=sys.stderr)",
        ],
        "env": {"API_TOKEN": "${CODEMODE_TEST_API_TOKEN}"},
        "restart": {"max_attempts": 0},
    }
    own = {"command": "uvx", "args": ["codemode-gateway", "serve", "--config", ".mcp.json"]}
    servers = {"working": EVERYTHING, "typo": EVERYTHING, "needy": needy, "failing": failing, "codemode": own}
    config = write_config(
        tmp_path_factory.mktemp("broken"),
        {"mcpServers": servers, "policy": {"deny": ["typo.ech"]}},
        name=".mcp.json",
    )
    env = environment({"CODEMODE_TEST_API_TOKEN": SECRET}, drop=(UNSET,))
    return Checked(config, env, *await cli("check", "--config", str(config), "--log-level", "INFO", env=env))


@pytest.fixture(scope="module")
async def broken_client(broken_entries: Checked) -> AsyncIterator[ClientSession]:
    async with session(broken_entries.config, env=broken_entries.env) as client:
        yield client


async def test_a_rule_naming_a_server_that_is_not_configured_refuses_the_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "policy": {"deny": ["tinny.*"]}})
    code, _, err = await cli("check", "--config", str(config))
    assert code == 2, err
    assert "policy.deny[0]" in err
    assert "names no configured server" in err
    assert 'did you mean "tiny"' in err


async def test_a_rule_that_matches_no_tool_blocks_its_server_until_it_is_fixed(
    broken_entries: Checked, broken_client: ClientSession
) -> None:
    code, out, err = broken_entries.code, broken_entries.out, broken_entries.err
    assert code == 1, out + err
    assert (
        'server typo is blocked: policy.deny[0] "typo.ech" matches none of its tools (did you mean typo.echo'
        in err
    )
    overview = await search_docs(broken_client)
    result = await execute(broken_client, "tools.typo.echo(message='hi')")
    assert 'typo (blocked: policy.deny[0] "typo.ech" matches none of its tools' in overview
    assert result["error"]["type"] == "ToolError"
    assert "server 'typo' is blocked" in result["error"]["message"]
    assert not result["tool_calls"] or not result["tool_calls"][0]["ok"]


async def test_a_rule_marked_optional_may_match_nothing(
    team_directory: Checked, team_client: ClientSession
) -> None:
    assert team_directory.code == 0, team_directory.out + team_directory.err
    assert "matches none" not in team_directory.err
    result = await execute(team_client, "tools.tiny.echo(text='hi')['result']")
    assert result["value"] == "hi"


async def test_check_says_nothing_of_rules_the_team_never_wrote(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"everything": EVERYTHING}})
    code, out, err = await cli("check", "--config", str(config))
    assert code == 0, out + err
    assert "policy" not in err


async def test_one_unset_variable_fails_only_the_entry_that_uses_it(
    broken_entries: Checked, broken_client: ClientSession
) -> None:
    code, out, err = broken_entries.code, broken_entries.out, broken_entries.err
    assert code == 1, out + err
    [row] = [line for line in out.splitlines() if line.startswith("needy ")]
    assert "failed" in row
    assert f"mcpServers.needy.env.TOKEN: ${{{UNSET}}} is not set" in row
    [working_row] = [line for line in out.splitlines() if line.startswith("working ")]
    assert "ready" in working_row
    overview = await search_docs(broken_client)
    result = await execute(broken_client, "tools.working.echo(message='hi')")
    assert f"${{{UNSET}}} is not set" in overview
    assert result["value"] == "Echo: hi"
    suite_code, suite_out, suite_err = await cli(
        "sandbox-test", "--config", str(broken_entries.config), "--only", "filesystem", env=broken_entries.env
    )
    assert suite_code == 0, suite_out + suite_err


async def test_an_entry_that_runs_the_gateway_itself_is_left_out_with_a_note(broken_entries: Checked) -> None:
    assert "mcpServers.codemode: left out: it runs codemode-gateway" in broken_entries.err
    [row] = [line for line in broken_entries.out.splitlines() if line.startswith("codemode ")]
    assert row.split()[1:4] == ["-", "left", "out"]
    assert broken_entries.code == 1  # for the config's other broken entries, not for this one


async def test_a_gateway_started_by_a_gateway_refuses_to_serve(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}})
    code, _, err = await cli(
        "serve", "--config", str(config), env=environment({"CODEMODE_GATEWAY_PARENT": "4242"})
    )
    assert code == 2
    assert "started by another codemode-gateway" in err
    assert "remove that entry" in err


async def test_every_child_knows_it_was_started_by_a_gateway(team_client: ClientSession) -> None:
    result = await execute(team_client, "import json\njson.loads(tools.tiny.env()['result'])")
    assert result["value"]["CODEMODE_GATEWAY_PARENT"].isdigit()


async def test_paths_in_the_config_resolve_against_its_directory(
    team_directory: Checked, team_client: ClientSession
) -> None:
    team = team_directory.config.parent
    result = await execute(team_client, "tools.tiny.echo(text='hi')['result']")
    assert result["value"] == "hi"
    assert (team / "logs" / "audit.jsonl").exists()
    assert not (team.parent / "elsewhere" / "logs").exists()


async def test_a_relative_config_that_is_not_there_says_where_it_looked(tmp_path: Path) -> None:
    code, _, err = await cli("check", "--config", "team.json", cwd=tmp_path)
    assert code == 2
    assert str(tmp_path / "team.json") in err
    assert str(tmp_path) in err


async def test_a_typo_in_a_key_is_a_sentence_with_a_did_you_mean(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"mcpServers": {"tiny": {"comand": sys.executable}}, "sandbox": {"timeout": 5}}
    )
    code, _, err = await cli("check", "--config", str(config))
    assert code == 2
    assert 'mcpServers.tiny.comand: unknown key "comand"; did you mean "command"?' in err
    assert 'sandbox.timeout: unknown key "timeout"; did you mean "timeout_seconds"?' in err
    assert "Field required" not in err
    assert "Extra inputs are not permitted" not in err


async def test_a_vs_code_config_is_refused_with_what_to_do(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "inputs": [{"type": "promptString", "id": "token", "password": True}],
            "servers": {"tiny": {**TINY, "env": {"TOKEN": "${input:token}"}}},
        },
    )
    code, _, err = await cli("check", "--config", str(config))
    assert code == 2
    assert "mcpServers" in err


async def test_cursor_and_claude_desktop_entries_load_and_other_clients_keys_are_noted(
    team_directory: Checked,
) -> None:
    code, out, err = team_directory.code, team_directory.out, team_directory.err
    assert code == 0, out + err
    assert "mcpServers.off: left out" in err
    assert "mcpServers.tiny.autoApprove: ignored" in err
    assert "off " not in out


async def test_a_failed_childs_stderr_never_shows_a_secret_in_check_or_search_docs(
    broken_entries: Checked, broken_client: ClientSession
) -> None:
    code, out, err = broken_entries.code, broken_entries.out, broken_entries.err
    assert code == 1
    assert "auth failed for token [REDACTED:CODEMODE_TEST_API_TOKEN]" in out
    assert SECRET not in out + err
    overview = await search_docs(broken_client)
    result = await execute(broken_client, "tools.failing.anything()")
    assert "[REDACTED:CODEMODE_TEST_API_TOKEN]" in overview
    assert SECRET not in overview
    assert SECRET not in str(result)
    assert os.environ.get("CODEMODE_TEST_API_TOKEN") != SECRET
