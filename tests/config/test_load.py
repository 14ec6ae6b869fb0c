"""Loading a config: where it comes from, every bad key on its own line, other clients' files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway import ConfigError
from gateway.children import HttpServer, SseServer, StdioServer
from gateway.config import (
    CONFIG_ENV,
    load_config,
    parse_config,
)
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
