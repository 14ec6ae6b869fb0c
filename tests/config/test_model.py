"""The config's JSON Schema: shipped, generated, and accepting what Claude Code and Desktop write."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from gateway import ConfigError
from gateway.config import (
    config_json_schema,
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
