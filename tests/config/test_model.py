"""The config's JSON Schema: shipped, generated, and accepting what Claude Code and Desktop write."""

from __future__ import annotations

import json

import jsonschema

from gateway.config import (
    config_json_schema,
    load_config,
)
from tests.config.helpers import CLAUDE_CODE_MCP_JSON, CLAUDE_DESKTOP_ENTRY
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
