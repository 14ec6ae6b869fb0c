"""Configs other clients write load, with a note for what the gateway ignores, or say what to change."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from gateway.children.config import HttpServer, SseServer, StdioServer
from gateway.config import parse_config
from tests.config.helpers import (
    CLAUDE_CODE_GATEWAY_ENTRY,
    CLAUDE_CODE_MCP_JSON,
    CLINE_MCP_SETTINGS,
    CURSOR_MCP_JSON,
    ROO_CODE_MCP_JSON,
    VSCODE_MCP_JSON,
    WINDSURF_MCP_CONFIG,
    errors_of,
)

# ---- Cursor and Windsurf ------------------------------------------------------------------------


def test_a_cursor_mcp_json_loads_its_url_entries_as_streamable_http_and_expands_env_references() -> None:
    environ = {"GITHUB_TOKEN": "ghp_cursor", "USERJOT_API_TOKEN": "uj_token"}
    config = parse_config(CURSOR_MCP_JSON, ".cursor/mcp.json", environ)
    servers = config.mcp_servers
    assert isinstance(servers["github"], StdioServer)
    assert servers["github"].env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_cursor"}
    assert isinstance(servers["linear"], HttpServer)
    assert servers["linear"].url == "https://mcp.linear.app/mcp"
    assert isinstance(servers["userjot"], HttpServer)
    assert servers["userjot"].headers == {"Authorization": "Bearer uj_token"}
    assert dict(config.secret_names) == {"ghp_cursor": "GITHUB_TOKEN", "uj_token": "USERJOT_API_TOKEN"}
    assert config.notes == (
        "mcpServers.db.envFile: ignored; the gateway reads no env file: export the variables and write "
        '${VAR} in "env", or list them in "env_passthrough"',
    )
    assert dict(config.unavailable_servers) == {}


def test_a_windsurf_config_loads_server_url_as_url_and_leaves_a_disabled_entry_out_with_a_note() -> None:
    environ = {"GITHUB_TOKEN": "ghp_windsurf", "FIGMA_TOKEN": "figd_token"}
    config = parse_config(WINDSURF_MCP_CONFIG, "mcp_config.json", environ)
    assert list(config.mcp_servers) == ["github", "figma"]
    figma = config.mcp_servers["figma"]
    assert isinstance(figma, HttpServer)
    assert (figma.url, figma.headers) == ("https://mcp.figma.com/mcp", {"Authorization": "Bearer figd_token"})
    assert config.notes == ('mcpServers.sqlite: left out, as its "disabled": true says',)
    assert dict(config.unavailable_servers) == {}


def test_a_disabled_entry_is_neither_expanded_nor_validated() -> None:
    entry = {"command": "${NOT_SET}", "disabled": True, "comand": "a draft the team switched off"}
    config = parse_config({"mcpServers": {"draft": entry, "time": {"command": "t"}}}, "team.json", {})
    assert list(config.mcp_servers) == ["time"]
    assert dict(config.unavailable_servers) == {}


def test_disabled_must_be_a_real_boolean() -> None:
    assert errors_of({"mcpServers": {"x": {"command": "x", "disabled": "true"}}}) == [
        "mcpServers.x.disabled: Input should be a valid boolean"
    ]


def test_server_url_and_url_together_are_refused() -> None:
    entry = {"url": "https://a/mcp", "serverUrl": "https://b/mcp"}
    assert errors_of({"mcpServers": {"x": entry}}) == [
        'mcpServers.x: give "url" or "serverUrl" (Windsurf\'s name for it), not both'
    ]


@pytest.mark.parametrize("kind", ["http", "streamable-http", "streamableHttp", "streamable_http"])
def test_every_spelling_of_streamable_http_means_http(kind: str) -> None:
    config = parse_config({"mcpServers": {"r": {"type": kind, "url": "https://x/mcp"}}}, "team.json", {})
    assert isinstance(config.mcp_servers["r"], HttpServer)
    assert config.mcp_servers["r"].transport == "http"


def test_an_entry_with_a_url_and_a_type_of_sse_stays_sse_and_one_with_a_command_stays_stdio() -> None:
    data = {
        "mcpServers": {
            "legacy": {"type": "sse", "url": "https://x/sse"},
            "both": {"command": "srv", "url": "https://x/mcp"},
        }
    }
    assert errors_of(data) == [
        'mcpServers.both.url: unknown key "url": an entry has "command" (stdio) or "url" (remote), not both'
    ]
    del data["mcpServers"]["both"]
    assert isinstance(parse_config(data, "team.json", {}).mcp_servers["legacy"], SseServer)


# ---- Cline and Roo Code -------------------------------------------------------------------------


def test_cline_settings_load_and_its_approval_and_timeout_keys_are_ignored_with_a_note() -> None:
    config = parse_config(CLINE_MCP_SETTINGS, "cline_mcp_settings.json", {"BRAVE_API_KEY": "bsa_key"})
    brave = config.mcp_servers["github.com/modelcontextprotocol/servers/tree/main/src/brave-search"]
    assert isinstance(brave, StdioServer)
    assert brave.env == {"BRAVE_API_KEY": "bsa_key"}
    assert isinstance(config.mcp_servers["docs"], HttpServer)
    policy = "the gateway's policy governs calls (policy.allow, policy.deny, policy.approve)"
    assert config.notes == (
        # A name with dots is quoted, as in every other key path.
        'mcpServers["github.com/modelcontextprotocol/servers/tree/main/src/brave-search"].autoApprove: '
        f"ignored; {policy}",
        f"mcpServers.docs.autoApprove: ignored; {policy}",
        "mcpServers.docs.timeout: ignored; use startup_timeout_seconds to connect, "
        "sandbox.tool_call_timeout_seconds per call",
    )


def test_roo_code_keys_are_ignored_with_a_note_each() -> None:
    config = parse_config(ROO_CODE_MCP_JSON, ".roo/mcp.json", {})
    assert set(config.mcp_servers) == {"filesystem", "remote"}
    assert [note.split(": ", 1)[0] for note in config.notes] == [
        "mcpServers.filesystem.alwaysAllow",
        "mcpServers.filesystem.timeout",
        "mcpServers.filesystem.watchPaths",
        "mcpServers.filesystem.disabledTools",
        "mcpServers.remote.alwaysAllow",
    ]
    assert "mcpServers.filesystem.watchPaths: ignored; the gateway watches no files" in config.notes[2]


def test_tools_disabled_in_the_entry_refuse_the_config_naming_the_policy_rules_to_write_instead() -> None:
    entry = {**ROO_CODE_MCP_JSON["mcpServers"]["filesystem"], "disabledTools": ["write_file", "move-file"]}
    assert errors_of({"mcpServers": {"my-files": entry}}) == [
        "mcpServers.my-files.disabledTools: the gateway does not disable tools per entry, so these would "
        'stay callable; hide them instead: "policy": '
        '{"hidden": ["my_files.write_file", "my_files.move_file"]}'
    ]


# ---- VS Code ------------------------------------------------------------------------------------


def test_a_vs_code_mcp_json_is_refused_saying_where_the_entries_go_and_what_replaces_prompts() -> None:
    assert errors_of(VSCODE_MCP_JSON) == [
        'servers: this is VS Code\'s layout (.vscode/mcp.json); move the entries under "mcpServers"',
        "inputs: VS Code prompts for these, and the gateway has no prompts: replace each ${input:...} with "
        'a ${VAR} environment reference, then remove "inputs"',
    ]


def test_a_vs_code_prompt_left_in_a_moved_entry_leaves_only_that_entry_out_naming_a_variable() -> None:
    config = parse_config({"mcpServers": VSCODE_MCP_JSON["servers"]}, "team.json", {})
    assert list(config.mcp_servers) == ["fetch"]
    assert dict(config.unavailable_servers) == {
        "github": "mcpServers.github.headers.Authorization: ${input:github_token} is a VS Code prompt, "
        "and the gateway has no prompts: use an environment variable, ${GITHUB_TOKEN}"
    }


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (
            "${workspaceFolder}/data",
            "${workspaceFolder} is an editor variable (Cursor, VS Code), and the gateway expands only "
            "environment variables (${NAME}, ${env:NAME})",
        ),
        ("${userHome}/.cache", "${userHome} is an editor variable (Cursor, VS Code): write ${HOME} instead"),
        (
            "${file:/run/secrets/token}",
            "${file:/run/secrets/token} reads a file (Windsurf), and the gateway expands only environment "
            "variables (${NAME}, ${env:NAME})",
        ),
    ],
)
def test_a_reference_only_an_editor_can_expand_leaves_its_entry_out_saying_why(
    value: str, reason: str
) -> None:
    config = parse_config({"mcpServers": {"s": {"command": "srv", "args": [value]}}}, "team.json", {})
    assert dict(config.unavailable_servers) == {"s": f"mcpServers.s.args[0]: {reason}"}


# ---- the gateway's own entry --------------------------------------------------------------------


def test_the_gateway_entry_claude_code_writes_into_mcp_json_is_left_out_with_a_note() -> None:
    data = {"mcpServers": {**CLAUDE_CODE_MCP_JSON["mcpServers"], "codemode": CLAUDE_CODE_GATEWAY_ENTRY}}
    config = parse_config(data, ".mcp.json", {"AIRTABLE_API_KEY": "pat1", "API_KEY": "k"})
    assert list(config.mcp_servers) == ["airtable", "sentry", "api", "asana"]
    assert config.notes == (
        "mcpServers.codemode: left out: it runs codemode-gateway, which would start itself again",
    )
    assert dict(config.unavailable_servers) == {
        "codemode": "mcpServers.codemode.command: runs codemode-gateway, which would start itself again"
    }


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"command": "/home/me/.local/bin/codemode-gateway", "args": ["serve"]}, "command"),
        ({"command": "C:\\Users\\me\\.local\\bin\\codemode-gateway.exe", "args": ["serve"]}, "command"),
        ({"command": "uvx", "args": ["codemode-gateway", "serve", "--config", "team.json"]}, "args[0]"),
        ({"command": "uvx", "args": ["codemode-gateway==0.4.0", "serve"]}, "args[0]"),
        (
            {"command": "uvx", "args": ["--from", "/src/dist/codemode_gateway.whl", "codemode-gateway"]},
            "args[2]",
        ),
        ({"command": "pipx", "args": ["run", "codemode-gateway", "serve"]}, "args[1]"),
        ({"command": sys.executable, "args": ["-m", "gateway", "serve", "--config", ".mcp.json"]}, "args[1]"),
        ({"command": "python3", "args": ["-I", "-mgateway", "serve"]}, "args[1]"),
        ({"command": "uv", "args": ["run", "python", "-m", "gateway", "serve"]}, "args[3]"),
        ({"command": "env", "args": ["/opt/venv/bin/codemode-gateway", "serve"]}, "args[0]"),
    ],
)
def test_every_way_of_running_the_gateway_itself_is_recognised(entry: dict[str, Any], key: str) -> None:
    config = parse_config({"mcpServers": {"gw": entry}}, "team.json", {})
    assert config.mcp_servers == {}
    assert config.unavailable_servers["gw"] == (
        f"mcpServers.gw.{key}: runs codemode-gateway, which would start itself again"
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "uvx", "args": ["mcp-server-git", "--repository", "/home/me/src/codemode-gateway"]},
        {"command": sys.executable, "args": ["-m", "gateway.escape.probe_server"]},
        {"command": "npx", "args": ["-y", "codemode-gateway-docs"]},
        {"command": "node", "args": ["-m", "gateway"]},
        {"type": "http", "url": "https://codemode-gateway.example.com/mcp"},
    ],
)
def test_entries_that_only_mention_the_gateway_are_kept(entry: dict[str, Any]) -> None:
    config = parse_config({"mcpServers": {"other": entry}}, "team.json", {})
    assert list(config.mcp_servers) == ["other"]
    assert config.notes == ()
