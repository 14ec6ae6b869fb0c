"""Honest mistakes fail closed or explain themselves, through the real gateway process.

A typo in a policy rule, an unset variable, a config holding the gateway's own entry, relative paths,
and configs written by other clients: each as a team would make it in its first hour.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.e2e.gateway_process import TINY, cli, environment, execute, search_docs, session, write_config

pytestmark = pytest.mark.anyio


async def test_a_rule_naming_a_server_that_is_not_configured_refuses_the_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "policy": {"deny": ["tinny.*"]}})
    code, _, err = await cli("check", "--config", str(config))
    assert code == 2, err
    assert "policy.deny[0]" in err
    assert "names no configured server" in err
    assert 'did you mean "tiny"' in err


async def test_a_rule_that_matches_no_tool_blocks_its_server_until_it_is_fixed(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "policy": {"deny": ["tiny.di"]}})
    code, out, err = await cli("check", "--config", str(config))
    assert code == 1, out + err
    assert (
        'server tiny is blocked: policy.deny[0] "tiny.di" matches none of its tools (did you mean tiny.die'
        in err
    )
    async with session(config) as client:
        overview = await search_docs(client)
        result = await execute(client, "tools.tiny.echo(text='hi')")
    assert 'tiny (blocked: policy.deny[0] "tiny.di" matches none of its tools' in overview
    assert result["error"]["type"] == "ToolError"
    assert "server 'tiny' is blocked" in result["error"]["message"]
    assert not result["tool_calls"] or not result["tool_calls"][0]["ok"]


async def test_a_rule_marked_optional_may_match_nothing(tmp_path: Path) -> None:
    rule = {"pattern": "tiny.di", "optional": True}
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}, "policy": {"deny": [rule]}})
    code, out, err = await cli("check", "--config", str(config))
    assert code == 0, out + err
    assert "matches none" not in err
    async with session(config) as client:
        result = await execute(client, "tools.tiny.echo(text='hi')['result']")
    assert result["value"] == "hi"


async def test_check_says_nothing_of_rules_the_team_never_wrote(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}})
    code, out, err = await cli("check", "--config", str(config))
    assert code == 0, out + err
    assert "policy" not in err


async def test_one_unset_variable_fails_only_the_entry_that_uses_it(tmp_path: Path) -> None:
    needy = {**TINY, "env": {"TOKEN": "${CODEMODE_TEST_UNSET_VARIABLE}"}}
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY, "needy": needy}})
    env = environment(drop=("CODEMODE_TEST_UNSET_VARIABLE",))
    code, out, err = await cli("check", "--config", str(config), env=env)
    assert code == 1, out + err
    [row] = [line for line in out.splitlines() if line.startswith("needy ")]
    assert "failed" in row
    assert "mcpServers.needy.env.TOKEN: ${CODEMODE_TEST_UNSET_VARIABLE} is not set" in row
    [tiny_row] = [line for line in out.splitlines() if line.startswith("tiny ")]
    assert "ready" in tiny_row
    async with session(config, env=env) as client:
        overview = await search_docs(client)
        result = await execute(client, "tools.tiny.echo(text='hi')['result']")
    assert "${CODEMODE_TEST_UNSET_VARIABLE} is not set" in overview
    assert result["value"] == "hi"
    suite_code, suite_out, suite_err = await cli(
        "sandbox-test", "--config", str(config), "--only", "filesystem", env=env
    )
    assert suite_code == 0, suite_out + suite_err


async def test_an_entry_that_runs_the_gateway_itself_is_left_out_with_a_note(tmp_path: Path) -> None:
    own = {"command": "uvx", "args": ["codemode-gateway", "serve", "--config", ".mcp.json"]}
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY, "codemode": own}}, name=".mcp.json")
    code, out, err = await cli("check", "--config", str(config))
    assert "mcpServers.codemode: left out: it runs codemode-gateway" in err
    [row] = [line for line in out.splitlines() if line.startswith("codemode ")]
    assert "failed" in row
    assert code == 1


async def test_a_gateway_started_by_a_gateway_refuses_to_serve(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}})
    code, _, err = await cli(
        "serve", "--config", str(config), env=environment({"CODEMODE_GATEWAY_PARENT": "4242"})
    )
    assert code == 2
    assert "started by another codemode-gateway" in err
    assert "remove that entry" in err


async def test_every_child_knows_it_was_started_by_a_gateway(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY}})
    async with session(config) as client:
        result = await execute(client, "import json\njson.loads(tools.tiny.env()['result'])")
    assert result["value"]["CODEMODE_GATEWAY_PARENT"].isdigit()


async def test_paths_in_the_config_resolve_against_its_directory(tmp_path: Path) -> None:
    team = tmp_path / "team"
    (team / "bin").mkdir(parents=True)
    launcher = team / "bin" / "tiny"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {TINY['args'][0]}\n", encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    (team / "work").mkdir()
    config = write_config(
        team,
        {
            "mcpServers": {"tiny": {"command": "./bin/tiny", "cwd": "work"}},
            "audit": {"path": "logs/audit.jsonl"},
        },
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with session(config, cwd=elsewhere) as client:
        result = await execute(client, "tools.tiny.echo(text='hi')['result']")
    assert result["value"] == "hi"
    assert (team / "logs" / "audit.jsonl").exists()
    assert not (elsewhere / "logs").exists()


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
    tmp_path: Path,
) -> None:
    off = {**TINY, "disabled": True}
    approving = {**TINY, "autoApprove": ["echo"]}
    config = write_config(tmp_path, {"mcpServers": {"tiny": approving, "off": off}})
    code, out, err = await cli("check", "--config", str(config))
    assert code == 0, out + err
    assert "mcpServers.off: left out" in err
    assert "mcpServers.tiny.autoApprove: ignored" in err
    assert "off " not in out


async def test_a_failed_childs_stderr_never_shows_a_secret_in_check_or_search_docs(tmp_path: Path) -> None:
    secret = "s3cr3t-" + "token-value-1234567890"
    failing = {
        "command": sys.executable,
        "args": [
            "-c",
            "import os, sys; print('auth failed for token', os.environ['API_TOKEN'], file=sys.stderr)",
        ],
        "env": {"API_TOKEN": "${CODEMODE_TEST_API_TOKEN}"},
        "restart": {"max_attempts": 0},
    }
    config = write_config(tmp_path, {"mcpServers": {"tiny": TINY, "failing": failing}})
    env = environment({"CODEMODE_TEST_API_TOKEN": secret})
    code, out, err = await cli("check", "--config", str(config), "--log-level", "INFO", env=env)
    assert code == 1
    assert "auth failed for token [REDACTED:CODEMODE_TEST_API_TOKEN]" in out
    assert secret not in out + err
    async with session(config, env=env) as client:
        overview = await search_docs(client)
        result = await execute(client, "tools.failing.anything()")
    assert "[REDACTED:CODEMODE_TEST_API_TOKEN]" in overview
    assert secret not in overview
    assert secret not in str(result)
    assert os.environ.get("CODEMODE_TEST_API_TOKEN") != secret
