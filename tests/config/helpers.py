"""Configs as other clients write them, and the error lines a config produces."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import ConfigError
from gateway.config import parse_config

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
    """The lines of the ConfigError that `data` raises (after checking the count in its head)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "team.json", environ or {})
    first, *lines = str(caught.value).splitlines()
    assert first == f"team.json: {len(lines)} invalid setting(s)"
    return [line.strip() for line in lines]
