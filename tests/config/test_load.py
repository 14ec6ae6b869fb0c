"""Loading a config: where it comes from, every bad key on its own line, other clients' files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gateway import ConfigError
from gateway.audit.config import AuditConfig
from gateway.children.config import HttpServer, SseServer, StdioServer
from gateway.config import format_validation_error, load_config, parse_config
from gateway.config._load import CONFIG_ENV
from tests.config.helpers import CLAUDE_CODE_MCP_JSON, CLAUDE_DESKTOP_ENTRY, errors_of


def test_every_bad_key_is_reported_with_its_path_and_no_traceback() -> None:
    data = {
        "mcpServers": {
            "github": {"command": "gh", "args": ["a", "b", 3], "comand": "typo"},
            "nocmd": {"args": []},
            "ws": {"type": "websocket", "url": "wss://x"},
            "badurl": {"type": "http", "url": "ftp://x/mcp"},
            "slow": {"command": "x", "startup_timeout_seconds": 0},
        },
        "startup_timeout_seconds": "soon",
        "sandbox": {"fuel": 1},
        "polcy": {},
    }
    errors = errors_of(data)
    paths = [line.split(": ", 1)[0] for line in errors]
    assert paths == [
        "mcpServers.github.args[2]",
        "mcpServers.github.comand",
        "mcpServers.nocmd",  # a missing key is reported at the entry that lacks it
        "mcpServers.ws",
        "mcpServers.badurl.url",
        "mcpServers.slow.startup_timeout_seconds",
        "startup_timeout_seconds",
        "sandbox.fuel",
        "polcy",
    ]
    assert 'mcpServers.github.comand: unknown key "comand"; did you mean "command"?' in errors
    assert 'mcpServers.nocmd: a stdio server needs "command" (a remote one needs "url")' in errors
    assert 'mcpServers.ws: "type" must be "stdio" (the default), "http", "streamable-http" or "sse"' in errors
    assert "mcpServers.badurl.url: must be an http:// or https:// URL" in errors
    assert 'polcy: unknown key "polcy"; did you mean "policy"?' in errors
    assert not any(
        "Traceback" in line or "Field required" in line or "Extra inputs" in line for line in errors
    )


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (
            {"sandbox": {"timeout": 5}},
            'sandbox.timeout: unknown key "timeout"; did you mean "timeout_seconds"?',
        ),
        ({"policy": {"hide": ["*.delete_*"]}}, 'policy.hide: unknown key "hide"; did you mean "hidden"?'),
        # Letter case aside, and the documented spelling, never the field name also accepted beside it.
        ({"mcpservers": {}}, 'mcpservers: unknown key "mcpservers"; did you mean "mcpServers"?'),
        (
            {"restart": {"max_attemps": 3}},
            'restart.max_attemps: unknown key "max_attemps"; did you mean "max_attempts"?',
        ),
        (
            {"mcpServers": {"git": {"command": "g", "restart": {"inital_seconds": 1}}}},
            'mcpServers.git.restart.inital_seconds: unknown key "inital_seconds"; '
            'did you mean "initial_seconds"?',
        ),
        (
            {"mcpServers": {"api": {"type": "http", "url": "https://x/mcp", "header": {}}}},
            'mcpServers.api.header: unknown key "header"; did you mean "headers"?',
        ),
        (
            {"mcpServers": {"git": {"command": "g"}}, "policy": {"tools": {"git.git_log": {"max_call": 1}}}},
            'policy.tools["git.git_log"].max_call: unknown key "max_call"; did you mean "max_calls"?',
        ),
        ({"audit": {"pth": "a.jsonl"}}, 'audit.pth: unknown key "pth"; did you mean "path"?'),
        ({"$shema": "x.json"}, 'unknown key "$shema"; did you mean "$schema"?'),
        (
            {"mcpServers": {"x": {"command": "x", "transport": "stdio"}}},
            'mcpServers.x.transport: unknown key "transport"',
        ),
    ],
)
def test_an_unknown_key_is_named_with_the_closest_key_taken_at_its_path(
    data: dict[str, Any], line: str
) -> None:
    [error] = errors_of(data)
    assert error.endswith(line)


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"mcpServers": {"api": {"type": "http"}}}, 'mcpServers.api: an http server needs "url"'),
        (
            {"mcpServers": {"wiki": {"type": "sse", "headers": {}}}},
            'mcpServers.wiki: an sse server needs "url"',
        ),
        (
            {"mcpServers": {"t": {"command": "t"}}, "policy": {"tools": {"t.now": {"rate": {"calls": 1}}}}},
            'policy.tools["t.now"].rate: "per_seconds" is required',
        ),
        ({"policy": {"deny": [{"optional": True}]}}, 'policy.deny[0]: "pattern" is required'),
        (
            {"mcpServers": {"s": "npx server"}},
            'mcpServers.s: an entry is an object, with "command" (a stdio server) or "url" (a remote one)',
        ),
        (
            ["not", "an", "object"],
            '(top level): the config is a JSON object, with the child servers under "mcpServers"',
        ),
    ],
)
def test_a_missing_key_or_a_wrong_shape_is_said_in_a_sentence(data: Any, line: str) -> None:
    assert errors_of(data) == [line]


def test_a_key_of_the_other_kind_of_server_says_which_kind_takes_it() -> None:
    data = {
        "mcpServers": {
            "local": {"command": "srv", "headers": {"X": "y"}},
            "remote": {"type": "http", "url": "https://x/mcp", "env": {"A": "b"}, "cwd": "/srv"},
        }
    }
    assert errors_of(data) == [
        'mcpServers.local.headers: unknown key "headers": "headers" is for a remote server, not a stdio one',
        'mcpServers.remote.env: unknown key "env": "env" is for a stdio server, not a remote one',
        'mcpServers.remote.cwd: unknown key "cwd": "cwd" is for a stdio server, not a remote one',
    ]


def test_the_audit_section_read_alone_gets_the_same_sentences() -> None:
    with pytest.raises(ValidationError) as caught:
        AuditConfig.model_validate({"pth": "a.jsonl", "backups": -1})
    assert format_validation_error(caught.value, "team.json: audit").splitlines() == [
        "team.json: audit: 2 invalid setting(s)",
        "  backups: Input should be greater than or equal to 0",
        '  pth: unknown key "pth"; did you mean "path"?',
    ]


def test_an_mcp_json_as_claude_code_writes_it_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(CLAUDE_CODE_MCP_JSON, indent=2), encoding="utf-8")
    config = load_config(path, {"AIRTABLE_API_KEY": "pat1", "API_KEY": "k"})
    servers = config.mcp_servers
    assert isinstance(servers["airtable"], StdioServer)
    assert servers["airtable"].env == {"AIRTABLE_API_KEY": "pat1"}
    assert isinstance(servers["sentry"], HttpServer)
    assert isinstance(servers["api"], HttpServer)
    assert servers["api"].url == "https://api.example.com/mcp"
    assert isinstance(servers["asana"], SseServer)
    assert [servers[name].transport for name in servers] == ["stdio", "http", "http", "sse"]


def test_claude_desktop_entries_without_a_type_are_stdio_and_streamable_http_is_http() -> None:
    data = {
        "mcpServers": {"fs": CLAUDE_DESKTOP_ENTRY, "r": {"type": "streamable-http", "url": "http://h/mcp"}}
    }
    config = parse_config(data, "claude_desktop_config.json", {})
    assert isinstance(config.mcp_servers["fs"], StdioServer)
    assert config.mcp_servers["r"].transport == "http"


def test_the_config_comes_from_the_flag_then_the_environment_then_the_builtin_default(tmp_path: Path) -> None:
    flag, env_file = tmp_path / "flag.json", tmp_path / "env.json"
    flag.write_text(json.dumps({"mcpServers": {"from_flag": {"command": "a"}}}), encoding="utf-8")
    env_file.write_text(json.dumps({"mcpServers": {"from_env": {"command": "b"}}}), encoding="utf-8")
    environ = {CONFIG_ENV: str(env_file)}
    assert list(load_config(flag, environ).mcp_servers) == ["from_flag"]
    assert list(load_config(None, environ).mcp_servers) == ["from_env"]
    assert {"time", "git"} <= set(load_config(None, {}).mcp_servers)


def test_a_relative_config_path_that_is_not_found_says_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_config("team/gateway.json", {})
    assert str(caught.value) == (
        "cannot read config team/gateway.json: No such file or directory; looked for "
        f"{tmp_path / 'team' / 'gateway.json'}, relative to the working directory {tmp_path}"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(None, {CONFIG_ENV: ".mcp.json"})
    assert str(caught.value).startswith("cannot read config .mcp.json (named by $CODEMODE_CONFIG): ")
    assert f"looked for {tmp_path / '.mcp.json'}" in str(caught.value)


def test_a_stdio_childs_relative_cwd_and_command_path_start_from_the_config_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "gateway.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": "./bin/server", "args": ["./data"], "cwd": "work"},
                    "nested": {"command": "tools/srv", "cwd": "/srv/absolute"},
                    "home": {"command": "~/bin/srv", "cwd": "~"},
                    "onpath": {"command": "npx", "args": ["-y", "server"]},
                }
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    servers = load_config("team/gateway.json", {}).mcp_servers
    local, nested, home, onpath = (servers[name] for name in ("local", "nested", "home", "onpath"))
    assert isinstance(local, StdioServer)
    assert (local.command, local.args, local.cwd) == (
        str(team / "bin" / "server"),
        ["./data"],
        str(team / "work"),
    )
    assert isinstance(nested, StdioServer)
    assert (nested.command, nested.cwd) == (str(team / "tools" / "srv"), "/srv/absolute")
    assert isinstance(home, StdioServer)
    assert (home.command, home.cwd) == (str(tmp_path / "me" / "bin" / "srv"), str(tmp_path / "me"))
    assert isinstance(onpath, StdioServer)
    assert (onpath.command, onpath.cwd) == ("npx", None)


def test_parsed_data_without_a_file_keeps_relative_paths_as_written() -> None:
    server = parse_config({"mcpServers": {"s": {"command": "./srv", "cwd": "w"}}}, "t", {}).mcp_servers["s"]
    assert isinstance(server, StdioServer)
    assert (server.command, server.cwd) == ("./srv", "w")


# ---- policy rules and the configured servers ----------------------------------------------------


def _with_policy(policy: dict[str, Any], **servers: dict[str, Any]) -> dict[str, Any]:
    entries = servers or {"github": {"type": "http", "url": "https://x/mcp"}, "git": {"command": "g"}}
    return {"mcpServers": entries, "policy": policy}


def test_a_policy_rule_naming_no_configured_server_is_a_config_error_with_a_did_you_mean() -> None:
    policy = {
        "deny": ["gitub.*"],
        "hidden": ["memroy.delete_*"],
        "approve": ["githb*"],
        "allow_writes": ["jira.create_issue"],
        "tools": {"gti.git_log": {"max_calls": 1}},
    }
    assert errors_of(_with_policy(policy)) == [
        'policy.allow_writes[0]: "jira.create_issue" names no configured server (configured: github, git)',
        'policy.deny[0]: "gitub.*" names no configured server; did you mean "github"?',
        'policy.hidden[0]: "memroy.delete_*" names no configured server (configured: github, git)',
        'policy.approve[0]: "githb*" names no configured server; did you mean "github"?',
        'policy.tools["gti.git_log"]: "gti.git_log" names no configured server; did you mean "git"?',
    ]


@pytest.mark.parametrize(
    "pattern",
    [
        "*",
        "*.delete_*",
        "g*",
        "git*",
        "git.*",
        "github.get_issue",
        "gi?.git_log",
        "[gh]it.*",
        "g?t*",
        "*_log",
    ],
)
def test_a_rule_whose_server_part_can_match_a_configured_server_is_accepted(pattern: str) -> None:
    config = parse_config(_with_policy({"deny": [pattern]}), "team.json", {})
    assert config.policy.deny == [pattern]


def test_an_optional_rule_may_name_a_server_that_is_not_configured() -> None:
    policy = {
        "deny": [{"pattern": "jira.*", "optional": True}, "git.git_push"],
        "tools": {"jira.create_issue": {"max_calls": 1, "optional": True}},
    }
    config = parse_config(_with_policy(policy), "team.json", {})
    assert config.policy.patterns("deny") == ["jira.*", "git.git_push"]


def test_rules_may_name_servers_that_are_disabled_left_out_or_not_python_names() -> None:
    servers = {
        "github": {
            "type": "http",
            "url": "https://x/mcp",
            "headers": {"Authorization": "Bearer ${GH_TOKEN}"},
        },
        "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"], "disabled": True},
        "brave-search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"]},
        "2fa": {"command": "otp-mcp"},
    }
    policy = {"deny": ["github.*", "sqlite.*", "brave_search.*", "_2fa.*"]}
    config = parse_config(_with_policy(policy, **servers), "team.json", {})
    assert set(config.mcp_servers) == {"brave-search", "2fa"}
    assert set(config.unavailable_servers) == {"github"}


def test_a_policy_error_and_a_settings_error_are_reported_together() -> None:
    data = _with_policy({"deny": ["gitub.*"]})
    data["sandbox"] = {"timeout_seconds": 0}
    assert errors_of(data) == [
        "sandbox.timeout_seconds: Input should be greater than 0",
        'policy.deny[0]: "gitub.*" names no configured server; did you mean "github"?',
    ]


def test_an_unreadable_or_invalid_json_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.json", {})
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.json: not valid JSON: .* line 1"):
        load_config(bad, {})


@pytest.mark.parametrize(
    ("expose", "line"),
    [
        (["screen"], "expose[0]: 'screen' must name one tool exactly, as search_docs shows it"),
        (["screen.*"], "expose[0]: 'screen.*' must name one tool exactly"),
        (["screen.shot", "screen.shot"], "expose: 'screen.shot' is listed more than once"),
        (["screan.shot"], 'expose[0]: "screan.shot" names no configured server; did you mean "screen"?'),
    ],
)
def test_an_expose_entry_that_can_list_no_tool_is_a_config_error_naming_it(
    expose: list[str], line: str
) -> None:
    [error] = errors_of({"mcpServers": {"screen": {"command": "s"}}, "expose": expose})
    assert line in error


def test_command_line_children_join_the_files_and_replace_its_entry_of_the_same_name(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    servers = {"time": {"command": "uvx", "args": ["mcp-server-time"]}, "gh": {"command": "old-gh"}}
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    given = {
        "gh": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}
    }
    config = load_config(path, {"GH_TOKEN": "t0k"}, command_line=given)
    assert list(config.mcp_servers) == ["time", "gh"]
    remote = config.mcp_servers["gh"]
    assert isinstance(remote, HttpServer)
    assert remote.headers == {"Authorization": "Bearer t0k"}  # expanded like a file's entry, and a secret
    assert "t0k" in config.secret_values
    assert "mcpServers.gh: the command line's entry replaces the file's" in config.notes
    assert config.command_line == given  # kept as written, for a reload to add again


def test_command_line_children_alone_replace_the_built_in_default(tmp_path: Path) -> None:
    config = load_config(None, {}, command_line={"tiny": {"command": "tiny-server"}})
    assert list(config.mcp_servers) == ["tiny"]
    assert config.config_file is None


def test_servers_sharing_a_python_name_are_a_config_error_naming_them() -> None:
    # `my-db` would be `my_db` or `my_db_2` depending on whether `my_db` is configured: a rule naming
    # `my_db` would move to another server as servers are added.
    data = {"mcpServers": {"my-db": {"command": "a"}, "my_db": {"command": "b"}, "web": {"command": "c"}}}
    assert errors_of(data) == [
        'mcpServers: "my-db" and "my_db" are all my_db in Python (search_docs, policy rules); rename all '
        "but one, so that a rule naming it names one server for good"
    ]


@pytest.mark.parametrize(
    "name", ["git\n  servers added: none", "git\x1b[2K", "git\x9b2K", "git\u202e", "git\u2028"]
)
def test_a_server_name_holding_a_control_or_invisible_character_is_refused_shown_escaped(name: str) -> None:
    data = {"mcpServers": {name: {"command": "git-mcp"}, "time": {"command": "time-mcp"}}}
    with pytest.raises(ConfigError) as refused:
        parse_config(data, "team.json", {})
    message = str(refused.value)
    assert "holds a control or invisible character" in message
    assert name not in message  # named escaped: the refusal cannot reshape the operator's terminal either
    assert "git\\u" in message


def test_a_server_name_in_another_script_is_accepted() -> None:
    config = parse_config({"mcpServers": {"dépôt-日本": {"command": "x"}}}, "team.json", {})
    assert list(config.mcp_servers) == ["dépôt-日本"]
