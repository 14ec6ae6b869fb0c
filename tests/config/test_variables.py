"""`${VAR}` expansion in server entries: defaults, missing variables, what is kept as secret."""

from __future__ import annotations

import json

from gateway.children.config import HttpServer, StdioServer
from gateway.config import (
    parse_config,
)
from tests.config.helpers import errors_of

# As `claude mcp add` writes them into a project's .mcp.json (stdio with "type", and http).
# As Claude Desktop's claude_desktop_config.json writes them: no "type" at all.


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


def test_a_missing_variable_leaves_only_its_entry_out_naming_the_variable_and_the_key() -> None:
    data = {
        "mcpServers": {
            "github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
        }
    }
    config = parse_config(data, "team.json", {})
    assert list(config.mcp_servers) == ["time"]
    assert dict(config.unavailable_servers) == {
        "github": "mcpServers.github.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set"
    }


def test_every_missing_variable_and_malformed_reference_of_an_entry_is_in_its_one_line_reason() -> None:
    data = {
        "mcpServers": {
            "a": {"command": "${CMD}", "args": ["ok", "${1BAD}", "${NOT_CLOSED"]},
            "b": {"type": "http", "url": "https://x/mcp", "headers": {"X-Key": "${KEY}"}},
            "c": {"url": "${BASE_URL}/mcp"},
        }
    }
    config = parse_config(data, "team.json", {})
    assert config.mcp_servers == {}
    assert dict(config.unavailable_servers) == {
        "a": "mcpServers.a.command: ${CMD} is not set; "
        "mcpServers.a.args[1]: malformed variable reference (write ${NAME} or ${NAME:-default}); "
        "mcpServers.a.args[2]: malformed variable reference (write ${NAME} or ${NAME:-default})",
        "b": "mcpServers.b.headers.X-Key: ${KEY} is not set",
        "c": "mcpServers.c.url: ${BASE_URL} is not set",  # not also "must be an http:// or https:// URL"
    }


def test_an_entry_left_out_for_a_variable_still_refuses_the_config_for_a_bad_key() -> None:
    data = {"mcpServers": {"github": {"comand": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}
    # Refused anyway, so the variable is named too: both get fixed in one round.
    assert errors_of(data) == [
        'mcpServers.github: a stdio server needs "command" (a remote one needs "url")',
        'mcpServers.github.comand: unknown key "comand"; did you mean "command"?',
        "mcpServers.github.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set",
    ]


def test_an_env_colon_reference_as_cursor_and_windsurf_write_it_expands_like_a_plain_one() -> None:
    entry = {"command": "srv", "args": ["${env:ORG}", "${env:REGION:-eu}"], "env": {"T": "${env:TOKEN}"}}
    config = parse_config({"mcpServers": {"s": entry}}, "team.json", {"ORG": "acme", "TOKEN": "tok3n"})
    server = config.mcp_servers["s"]
    assert isinstance(server, StdioServer)
    assert (server.args, server.env) == (["acme", "eu"], {"T": "tok3n"})
    assert dict(config.secret_names) == {"acme": "ORG", "tok3n": "TOKEN"}


def test_values_an_entry_left_out_took_from_the_environment_are_still_kept_as_secrets() -> None:
    entry = {"command": "gh", "env": {"TOKEN": "${GITHUB_TOKEN}", "ORG": "${GITHUB_ORG}"}}
    config = parse_config({"mcpServers": {"gh": entry}}, "team.json", {"GITHUB_TOKEN": "ghp_set"})
    assert set(config.unavailable_servers) == {"gh"}
    assert config.secret_values == frozenset({"ghp_set"})


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
