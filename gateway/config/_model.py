"""The whole config file's model: a superset of the `mcpServers` JSON of Claude Code and Claude Desktop.

Each section's model lives beside the wing that runs it; this module only assembles them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from gateway.audit import AuditConfig
from gateway.children import DEFAULT_STARTUP_TIMEOUT_SECONDS, RestartPolicy, ServerConfig
from gateway.policy import PolicyConfig
from gateway.sandbox import SandboxLimits

__all__ = ["GatewayConfig", "config_json_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class GatewayConfig(BaseModel):
    """codemode-gateway config: a superset of the `mcpServers` JSON of Claude Code and Claude Desktop."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="codemode-gateway config")

    schema_: str | None = Field(
        default=None, alias="$schema", description="JSON Schema URL or path, for editors."
    )
    mcp_servers: dict[str, ServerConfig] = Field(
        default_factory=dict,
        alias="mcpServers",
        description="Child MCP servers by name; `${VAR}` and `${VAR:-default}` expand from the environment.",
    )
    startup_timeout_seconds: float = Field(
        default=DEFAULT_STARTUP_TIMEOUT_SECONDS,
        gt=0,
        le=3600,
        description="Default seconds for a child to connect and list its tools.",
    )
    restart: RestartPolicy = Field(
        default_factory=RestartPolicy,
        description="How children that exit, lose their connection or stop answering are reconnected: "
        "exponential backoff with jitter, up to a cap; a child's own `restart` overrides keys of it.",
    )
    sandbox: SandboxLimits = Field(default_factory=SandboxLimits)
    policy: PolicyConfig = Field(
        default_factory=PolicyConfig, description="Which tools are listed and callable, and how often."
    )
    audit: AuditConfig | None = Field(
        default=None, description="Record every execution and tool call in a JSON Lines file; off if absent."
    )
    # Values that came from environment variables, with the variable each came from, for redaction;
    # private, so never in repr or dumps.
    _secret_names: dict[str, str] = PrivateAttr(default_factory=dict[str, str])
    _config_dir: Path | None = PrivateAttr(default=None)

    @property
    def secret_values(self) -> frozenset[str]:
        """Non-empty values that `${VAR}` expansion took from the environment."""
        return frozenset(self._secret_names)

    @property
    def secret_names(self) -> Mapping[str, str]:
        """Each of `secret_values`, mapped to the variable it came from (the first, if several)."""
        return MappingProxyType(self._secret_names)

    @property
    def base_dir(self) -> Path:
        """The directory relative paths in the config (such as `audit.path`) start from: the file's own."""
        return self._config_dir or Path.cwd()

    def set_origin(self, *, secret_names: Mapping[str, str], config_dir: Path | None) -> None:
        """Record what `${VAR}` expansion took from the environment, and the file's directory."""
        self._secret_names = dict(secret_names)
        self._config_dir = config_dir


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (what `codemode-gateway schema` prints)."""
    schema = GatewayConfig.model_json_schema(by_alias=True)
    head = {"$schema": SCHEMA_DIALECT, "title": schema.pop("title"), "description": schema.pop("description")}
    return head | schema
