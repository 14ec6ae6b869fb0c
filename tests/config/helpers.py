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

# What `claude mcp add --scope project codemode -- codemode-gateway serve --config .mcp.json` adds to
# the same .mcp.json: pointed at this file, the gateway would start itself.
CLAUDE_CODE_GATEWAY_ENTRY: dict[str, Any] = {
    "type": "stdio",
    "command": "codemode-gateway",
    "args": ["serve", "--config", ".mcp.json"],
    "env": {},
}
# Cursor's .cursor/mcp.json: remote entries with a "url" and no "type", `${env:VAR}` references.
CURSOR_MCP_JSON: dict[str, Any] = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"},
        },
        "linear": {"url": "https://mcp.linear.app/mcp"},
        "userjot": {
            "url": "https://api.userjot.com/v1/mcp",
            "headers": {"Authorization": "Bearer ${env:USERJOT_API_TOKEN}"},
        },
        "db": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite"], "envFile": ".env"},
    }
}
# Windsurf's ~/.codeium/windsurf/mcp_config.json: "serverUrl" for remote entries, "disabled".
WINDSURF_MCP_CONFIG: dict[str, Any] = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"},
        },
        "figma": {
            "serverUrl": "https://mcp.figma.com/mcp",
            "headers": {"Authorization": "Bearer ${env:FIGMA_TOKEN}"},
        },
        "sqlite": {
            "command": "uvx",
            "args": ["mcp-server-sqlite", "--db-path", "/tmp/test.db"],
            "disabled": True,
            "disabledTools": [],
        },
    }
}
# Cline's cline_mcp_settings.json: names from its marketplace, "autoApprove", "timeout", "streamableHttp".
CLINE_MCP_SETTINGS: dict[str, Any] = {
    "mcpServers": {
        "github.com/modelcontextprotocol/servers/tree/main/src/brave-search": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-brave-search"],
            "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
            "disabled": False,
            "autoApprove": [],
        },
        "docs": {
            "type": "streamableHttp",
            "url": "https://mcp.example.com/mcp",
            "disabled": False,
            "autoApprove": ["search_docs"],
            "timeout": 60,
        },
    }
}
# Roo Code's .roo/mcp.json: "alwaysAllow", "watchPaths", "disabledTools".
ROO_CODE_MCP_JSON: dict[str, Any] = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/project"],
            "alwaysAllow": ["read_file"],
            "disabled": False,
            "timeout": 60,
            "watchPaths": ["build/index.js"],
            "disabledTools": [],
        },
        "remote": {"type": "streamable-http", "url": "https://mcp.example.com/mcp", "alwaysAllow": []},
    }
}
# VS Code's .vscode/mcp.json: "servers" at the top, and "inputs" the editor prompts for.
VSCODE_MCP_JSON: dict[str, Any] = {
    "inputs": [
        {
            "type": "promptString",
            "id": "github_token",
            "description": "GitHub Personal Access Token",
            "password": True,
        }
    ],
    "servers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/",
            "headers": {"Authorization": "Bearer ${input:github_token}"},
        },
        "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
    },
}


def errors_of(data: Any, environ: dict[str, str] | None = None) -> list[str]:
    """The lines of the ConfigError that `data` raises (after checking the count in its head)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "team.json", environ or {})
    first, *lines = str(caught.value).splitlines()
    assert first == f"team.json: {len(lines)} invalid setting(s)"
    return [line.strip() for line in lines]
