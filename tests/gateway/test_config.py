"""The config file: `mcpServers` as Claude Code and Claude Desktop write it, `${VAR}` expansion, discovery."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gateway import ConfigError
from gateway._config import (
    CONFIG_ENV,
    NPM_SERVER_PINS,
    HttpServer,
    SseServer,
    StdioServer,
    config_json_schema,
    default_config,
    load_config,
    parse_config,
)
from tests.real_servers import REPO

# As `claude mcp add` writes them into a project's .mcp.json (stdio with "type", and http).
CLAUDE_CODE_MCP_JSON: dict[str, Any] = {
    "mcpServers": {
        "airtable": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "airtable-mcp-server"],
            "env": {"AIRTABLE_API_KEY": "${AIRTABLE_API_KEY}"},
        },
        "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"},
        "api": {
            "type": "http",
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
        },
        "asana": {"type": "sse", "url": "https://mcp.asana.com/sse"},
    }
}
# As Claude Desktop's claude_desktop_config.json writes them: no "type" at all.
CLAUDE_DESKTOP_ENTRY: dict[str, Any] = {
    "command": "npx",
    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
}


def errors_of(data: Any, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "team.json", environ or {})
    first, *lines = str(caught.value).splitlines()
    assert first == f"team.json: {len(lines)} invalid setting(s)"
    return [line.strip() for line in lines]


def test_variables_expand_in_every_string_of_a_server_entry() -> None:
    env = {"BIN": "/opt/bin/srv", "ARG": "--fast", "TOKEN": "s3cret", "DIR": "/srv", "HOST": "h.example"}
    config = parse_config(
        {
            "mcpServers": {
                "local": {
                    "command": "${BIN}",
                    "args": ["${ARG}", "x-${ARG}-y"],
                    "env": {"TOKEN": "${TOKEN}"},
                    "cwd": "${DIR}",
                },
                "remote": {
                    "type": "http",
                    "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
            }
        },
        "team.json",
        env,
    )
    local, remote = config.mcp_servers["local"], config.mcp_servers["remote"]
    assert isinstance(local, StdioServer)
    assert (local.command, local.args, local.env, local.cwd) == (
        "/opt/bin/srv",
        ["--fast", "x---fast-y"],
        {"TOKEN": "s3cret"},
        "/srv",
    )
    assert isinstance(remote, HttpServer)
    assert (remote.url, remote.headers) == ("https://h.example/mcp", {"Authorization": "Bearer s3cret"})


def test_a_default_applies_when_the_variable_is_unset_or_empty_and_text_without_braces_stays() -> None:
    entry = {"command": "srv", "args": ["${A:-one}", "${B:-two}", "${C:-}", "$HOME", "${D}"]}
    config = parse_config({"mcpServers": {"s": entry}}, "team.json", {"B": "", "D": ""})
    server = config.mcp_servers["s"]
    assert isinstance(server, StdioServer)
    assert server.args == ["one", "two", "", "$HOME", ""]


def test_a_missing_variable_names_the_variable_and_the_key_that_uses_it() -> None:
    data = {"mcpServers": {"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}
    assert errors_of(data) == ["mcpServers.github.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set"]


def test_every_missing_variable_and_malformed_reference_is_reported_at_once() -> None:
    data = {
        "mcpServers": {
            "a": {"command": "${CMD}", "args": ["ok", "${1BAD}", "${NOT_CLOSED"]},
            "b": {"type": "http", "url": "https://x/mcp", "headers": {"X-Key": "${KEY}"}},
        }
    }
    assert errors_of(data) == [
        "mcpServers.a.command: ${CMD} is not set",
        "mcpServers.a.args[1]: malformed variable reference (write ${NAME} or ${NAME:-default})",
        "mcpServers.a.args[2]: malformed variable reference (write ${NAME} or ${NAME:-default})",
        "mcpServers.b.headers.X-Key: ${KEY} is not set",
    ]


def test_values_taken_from_the_environment_are_kept_as_secrets_and_never_in_repr_or_dumps() -> None:
    data = {
        "mcpServers": {
            "gh": {"command": "gh", "args": ["--org", "${ORG:-acme}"], "env": {"TOKEN": "${GITHUB_TOKEN}"}},
            "api": {
                "type": "http",
                "url": "https://x/mcp",
                "headers": {"Authorization": "Bearer ${API_KEY}"},
            },
        }
    }
    config = parse_config(data, "team.json", {"GITHUB_TOKEN": "ghp_abc", "API_KEY": "sk-123"})
    # A default written in the file is not a secret; values from the environment are.
    assert config.secret_values == frozenset({"ghp_abc", "sk-123"})
    assert "ghp_abc" not in repr(config)
    assert "sk-123" not in repr(config)
    assert "secret" not in config.model_dump_json()
    assert "secret" not in json.dumps(config.model_dump(mode="json"))


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
        "mcpServers.nocmd.command",
        "mcpServers.ws",
        "mcpServers.badurl.url",
        "mcpServers.slow.startup_timeout_seconds",
        "startup_timeout_seconds",
        "sandbox.fuel",
        "polcy",
    ]
    assert 'mcpServers.ws: "type" must be "stdio" (the default), "http", "streamable-http" or "sse"' in errors
    assert "mcpServers.badurl.url: must be an http:// or https:// URL" in errors
    assert not any("Traceback" in line for line in errors)


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


def test_an_unreadable_or_invalid_json_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.json", {})
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.json: not valid JSON: .* line 1"):
        load_config(bad, {})


def test_the_builtin_default_runs_time_and_git_from_this_venv_on_the_enclosing_repository(
    git_repo: Path, tmp_path: Path
) -> None:
    inside = git_repo / "sub" / "dir"
    inside.mkdir(parents=True)
    servers = default_config(inside).mcp_servers
    time, git = servers["time"], servers["git"]
    assert isinstance(time, StdioServer)
    assert isinstance(git, StdioServer)
    assert (time.command, time.args) == (sys.executable, ["-m", "mcp_server_time"])
    assert (git.command, git.args) == (
        sys.executable,
        ["-m", "mcp_server_git", "--repository", str(git_repo)],
    )
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    git_outside = default_config(outside).mcp_servers["git"]
    assert isinstance(git_outside, StdioServer)
    assert git_outside.args == ["-m", "mcp_server_git"]


def test_the_builtin_default_adds_the_pinned_npm_servers_only_when_npx_is_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    npx = fake_bin / "npx"
    npx.write_text("#!/bin/sh\n", encoding="utf-8")
    npx.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_bin))
    servers = default_config(tmp_path).mcp_servers
    memory, everything = servers["memory"], servers["everything"]
    assert isinstance(memory, StdioServer)
    assert isinstance(everything, StdioServer)
    assert memory.args == [
        "-y",
        "@modelcontextprotocol/server-memory@" + NPM_SERVER_PINS["@modelcontextprotocol/server-memory"],
    ]
    assert everything.command == "npx"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert set(default_config(tmp_path).mcp_servers) == {"time", "git"}


def test_the_makefile_installs_exactly_the_npm_versions_the_default_pins() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    pinned = dict(re.findall(r"(@modelcontextprotocol/server-[a-z]+)@(\d[\w.]*)", makefile))
    assert pinned == NPM_SERVER_PINS


def test_the_shipped_schema_file_equals_the_generated_schema() -> None:
    shipped = (REPO / "codemode-gateway.schema.json").read_text(encoding="utf-8")
    generated = json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n"
    assert shipped == generated, "regenerate it: codemode-gateway schema > codemode-gateway.schema.json"


def test_the_schema_names_its_dialect_and_title_and_accepts_the_claude_code_and_desktop_shapes() -> None:
    schema = config_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "codemode-gateway config"
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(CLAUDE_CODE_MCP_JSON)
    validator.validate({"mcpServers": {"fs": CLAUDE_DESKTOP_ENTRY}})
    assert list(validator.iter_errors({"mcpServers": {"x": {"comand": "typo"}}}))


def test_the_team_example_validates_against_the_shipped_schema_and_loads() -> None:
    example = REPO / "examples" / "team-config.json"
    data = json.loads(example.read_text(encoding="utf-8"))
    assert data["$schema"] == "../codemode-gateway.schema.json"
    schema = json.loads((example.parent / data["$schema"]).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    config = load_config(example, {"GITHUB_TOKEN": "ghp_x", "HOME": "/home/me"})
    assert set(config.mcp_servers) == {"time", "git", "memory", "github", "wiki"}
    assert "ghp_x" in config.secret_values
