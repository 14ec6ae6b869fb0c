"""The config's JSON Schema: shipped, generated, and accepting what Claude Code and Desktop write."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from gateway.config import (
    GatewayConfig,
    config_json_schema,
    load_config,
)
from tests.config.helpers import (
    CLAUDE_CODE_GATEWAY_ENTRY,
    CLAUDE_CODE_MCP_JSON,
    CLAUDE_DESKTOP_ENTRY,
    CLINE_MCP_SETTINGS,
    CURSOR_MCP_JSON,
    ROO_CODE_MCP_JSON,
    VSCODE_MCP_JSON,
    WINDSURF_MCP_CONFIG,
)
from tests.real_servers import REPO


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


@pytest.mark.parametrize(
    "config",
    [
        CURSOR_MCP_JSON,
        WINDSURF_MCP_CONFIG,
        CLINE_MCP_SETTINGS,
        ROO_CODE_MCP_JSON,
        {"mcpServers": {**CLAUDE_CODE_MCP_JSON["mcpServers"], "codemode": CLAUDE_CODE_GATEWAY_ENTRY}},
        {"mcpServers": {}, "policy": {"deny": ["git.git_push", {"pattern": "jira.*", "optional": True}]}},
    ],
)
def test_the_schema_accepts_what_the_loader_accepts_from_other_clients(config: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(config_json_schema()).validate(config)


@pytest.mark.parametrize(
    "config",
    [
        VSCODE_MCP_JSON,
        {"mcpServers": {"x": {"url": "https://a/mcp", "serverUrl": "https://b/mcp"}}},
        {"mcpServers": {"x": {"type": "sse"}}},
        {"mcpServers": {"x": {"command": "x", "disabled": "true"}}},
        {"policy": {"deny": [{"pattern": "git.*", "optionl": True}]}},
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(config: dict[str, Any]) -> None:
    assert list(jsonschema.Draft202012Validator(config_json_schema()).iter_errors(config))


def test_a_disabled_entry_is_left_out_even_when_the_model_is_validated_directly() -> None:
    config = GatewayConfig.model_validate(
        {"mcpServers": {"on": {"command": "a"}, "off": {"command": "b", "disabled": True}}}
    )
    assert list(config.mcp_servers) == ["on"]
    assert config.notes == ()
    assert dict(config.unavailable_servers) == {}


def test_the_keys_of_other_clients_are_accepted_but_never_kept_in_dumps() -> None:
    entry = {"command": "a", "autoApprove": ["x"], "alwaysAllow": [], "timeout": 60, "envFile": ".env"}
    config = GatewayConfig.model_validate({"mcpServers": {"s": {**entry, "watchPaths": ["x"]}}})
    dumped = config.model_dump(mode="json", by_alias=True)["mcpServers"]["s"]
    assert not {"autoApprove", "alwaysAllow", "timeout", "envFile", "watchPaths", "disabledTools"} & set(
        dumped
    )
