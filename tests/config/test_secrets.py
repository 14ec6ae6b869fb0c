"""Which config values are secret: `${VAR}` expansions, passed-through variables, literal secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway import ConfigError
from gateway.config import (
    config_secrets,
    find_literal_secrets,
    literal_secret_warning,
    load_config,
    parse_config,
)
from gateway.shared._redaction import Redactor
from tests.real_servers import REPO

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor({TOKEN: "GITHUB_TOKEN", 'pa ss/wo+rd"\\é': "DB_PASSWORD"})


# ---- secrets of a config ------------------------------------------------------------------------


def test_a_config_maps_each_secret_value_to_the_variable_it_came_from() -> None:
    data = {
        "mcpServers": {
            "gh": {"command": "gh", "env": {"TOKEN": "${GITHUB_TOKEN}", "ALSO": "${SAME_TOKEN}"}},
            "api": {"type": "http", "url": "https://x/mcp", "headers": {"X-Key": "${API_KEY:-unused}"}},
        }
    }
    environ = {"GITHUB_TOKEN": "ghp_value", "SAME_TOKEN": "ghp_value", "API_KEY": "sk-value"}
    config = parse_config(data, "team.json", environ)
    assert dict(config.secret_names) == {"ghp_value": "GITHUB_TOKEN", "sk-value": "API_KEY"}
    assert config.secret_values == frozenset({"ghp_value", "sk-value"})
    assert "ghp_value" not in repr(config)


def test_the_secrets_of_a_config_cover_variables_passthrough_and_literal_secrets_but_not_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    literal = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0"
    data = {
        "mcpServers": {
            "gh": {
                "command": "gh",
                "env": {"TOKEN": "${GITHUB_TOKEN}", "CACHE": "${HOME}/.cache", "ANTHROPIC_API_KEY": literal},
                "env_passthrough": ["AWS_SECRET_ACCESS_KEY", "NOT_SET_ANYWHERE"],
            }
        }
    }
    environ = {"GITHUB_TOKEN": TOKEN, "HOME": "/home/me", "AWS_SECRET_ACCESS_KEY": "aws/secret+value"}
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws/secret+value")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    redactor = Redactor(config_secrets(parse_config(data, "team.json", environ)))
    assert redactor.redact(f"{TOKEN} /home/me/x aws/secret+value {literal}") == (
        "[REDACTED:GITHUB_TOKEN] /home/me/x [REDACTED:AWS_SECRET_ACCESS_KEY] [REDACTED:ANTHROPIC_API_KEY]"
    )


def test_env_passthrough_takes_variable_names_only() -> None:
    with pytest.raises(ConfigError, match=r"mcpServers\.s\.env_passthrough\[0\]: String should match"):
        parse_config({"mcpServers": {"s": {"command": "x", "env_passthrough": ["NOT-A-NAME"]}}}, "t", {})
    remote = {"type": "http", "url": "https://x/mcp", "env_passthrough": ["A"]}
    with pytest.raises(ConfigError, match="env_passthrough"):
        parse_config({"mcpServers": {"r": remote}}, "t", {})


def test_a_loaded_config_knows_its_directory_for_relative_paths(tmp_path: Path) -> None:
    file = tmp_path / "team" / "gateway.json"
    file.parent.mkdir()
    file.write_text(json.dumps({"mcpServers": {}, "audit": {"path": "logs/audit.jsonl"}}), encoding="utf-8")
    config = load_config(file, {})
    assert config.base_dir == file.parent.resolve()
    assert config.audit is not None
    assert config.audit.resolve_path(config.base_dir) == file.parent.resolve() / "logs" / "audit.jsonl"


# ---- literal secrets in a config ----------------------------------------------------------------


def _servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


@pytest.mark.parametrize(
    "value",
    [
        "ghp_" + "A1b2" * 9,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "gho_" + "x9" * 18,
        "xoxb-1234567890-abcdefghij",
        "xoxp-1234567890-abcdefghij",
        "sk-" + "Ab3" * 10,
        "sk-ant-api03-" + "Zy9" * 8,
        "AKIAIOSFODNN7EXAMPLE",
        "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
        "npm_" + "a1B2c3D4e5" * 3 + "f6G7h8",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
)
def test_a_known_token_shape_is_a_literal_secret_wherever_it_is(value: str) -> None:
    data = _servers(s={"command": "srv", "args": ["--org", "acme", value], "env": {"X": value}})
    data["note"] = {"deep": [value]}
    assert find_literal_secrets(data) == ["mcpServers.s.env.X", "mcpServers.s.args[2]", "note.deep[0]"]


def test_variable_references_are_not_literal_secrets_but_a_literal_default_is() -> None:
    data = _servers(
        gh={"command": "gh", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "B": "${B:-ghp_" + "A1b2" * 9 + "}"}},
        api={"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
    )
    assert find_literal_secrets(data) == ["mcpServers.gh.env.B"]


def test_the_shipped_example_configs_hold_no_literal_secret() -> None:
    example = json.loads((REPO / "examples" / "team-config.json").read_text(encoding="utf-8"))
    assert find_literal_secrets(example) == []


def test_a_bearer_token_in_a_header_and_a_password_like_value_under_a_secret_name_are_found() -> None:
    data = _servers(
        api={
            "type": "http",
            "url": "https://x/mcp",
            "headers": {
                "Authorization": "Bearer abcdefghijklmnop",
                "X-Api-Key": "k3y-value-123",
                "Accept": "application/json",
            },
        },
        db={"command": "db", "env": {"DB_PASSWORD": "hunter2hunter2", "MODE": "production", "LEVEL": "info"}},
    )
    assert find_literal_secrets(data) == [
        "mcpServers.api.headers.Authorization",
        "mcpServers.api.headers.X-Api-Key",
        "mcpServers.db.env.DB_PASSWORD",
    ]


def test_values_after_secret_flags_and_in_urls_are_found_but_paths_and_plain_words_are_not() -> None:
    data = _servers(
        cli={
            "command": "srv",
            "args": [
                "--token",
                "t0k3n-value-99",
                "--api-key=zzz999zzz999",
                "--repository",
                "/srv/repo",
                "-v",
            ],
        },
        remote={"type": "http", "url": "https://bot:pw12345@h.example/mcp?api_key=abc123def456&page=2"},
    )
    assert find_literal_secrets(data) == [
        "mcpServers.cli.args[1]",
        "mcpServers.cli.args[2]",
        "mcpServers.remote.url",
    ]


def test_long_random_env_values_are_found_but_commit_ids_uuids_and_paths_are_not() -> None:
    env = {
        "SIGNING": "Xk9fQ2mZ7pL0aB4cD8eF1gH5",
        "COMMIT": "3f2a9c1b7d4e6f80a1b2c3d4e5f60718293a4b5c",
        "RUN_ID": "123e4567-e89b-12d3-a456-426614174000",
        "DATA": "/var/lib/data/Xk9fQ2mZ7pL0aB4cD8eF1gH5",
    }
    assert find_literal_secrets(_servers(s={"command": "x", "env": env})) == ["mcpServers.s.env.SIGNING"]


def test_the_warning_names_the_path_and_the_variable_to_use() -> None:
    assert literal_secret_warning("mcpServers.github.env.GITHUB_TOKEN") == (
        "warning: mcpServers.github.env.GITHUB_TOKEN looks like a literal secret; use ${GITHUB_TOKEN}"
    )
    assert literal_secret_warning("mcpServers.api.headers.Authorization") == (
        "warning: mcpServers.api.headers.Authorization looks like a literal secret; use a ${VAR} reference"
    )


def test_a_password_in_windsurfs_server_url_is_found_like_one_in_url() -> None:
    data = _servers(figma={"serverUrl": "https://bot:pw12345@mcp.figma.com/mcp"})
    assert find_literal_secrets(data) == ["mcpServers.figma.serverUrl"]
