"""The whole config file's model: a superset of the `mcpServers` JSON of Claude Code and Claude Desktop.

Each section's model lives beside the wing that runs it; this module only assembles them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from gateway.audit.config import AuditConfig
from gateway.auth.config import AuthConfig
from gateway.catalog.config import SearchConfig
from gateway.children.config import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    MAX_MAX_CONCURRENT_CALLS,
    MAX_MAX_MESSAGE_BYTES,
    MIN_MAX_MESSAGE_BYTES,
    RestartPolicy,
    ServerConfig,
)
from gateway.config._background import BackgroundConfig
from gateway.config._http import HttpConfig
from gateway.middleware.config import (
    DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS,
    MAX_MIDDLEWARE_TIMEOUT_SECONDS,
    MiddlewarePath,
)
from gateway.policy.config import ApprovalsConfig, PolicyConfig, ToolName
from gateway.sandbox.limits import SandboxLimits
from gateway.state.config import StateConfig

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
        description="Child MCP servers by name; `${VAR}`, `${env:VAR}` and `${VAR:-default}` expand from "
        "the environment. An entry using a variable that is not set is left out and reported as failed, "
        "naming the variable (the others still run).",
    )
    startup_timeout_seconds: float = Field(
        default=DEFAULT_STARTUP_TIMEOUT_SECONDS,
        gt=0,
        le=3600,
        description="Default seconds for a child to connect and list its tools.",
    )
    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES,
        ge=MIN_MAX_MESSAGE_BYTES,
        le=MAX_MAX_MESSAGE_BYTES,
        description="Cap in bytes on one message from a child (an answer, as JSON), enforced as it is "
        "read: a larger answer fails its call at once, and the child serves on. A child's own "
        "`max_message_bytes` overrides it.",
    )
    max_concurrent_calls: int = Field(
        default=DEFAULT_MAX_CONCURRENT_CALLS,
        ge=1,
        le=MAX_MAX_CONCURRENT_CALLS,
        description="Calls to one child in flight at once, from every execution (a snippet's "
        "asyncio.gather, several clients); more wait their turn within their timeout. With `auth`, one "
        "caller holds at most all but one of them (one of one), its further calls waiting for its own "
        "share. A child's own `max_concurrent_calls` overrides it.",
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
    expose: list[ToolName] = Field(
        default_factory=list[str],
        description="Child tools listed to the client directly, beside search_docs and execute_code, as "
        "`server.tool` the way search_docs shows them: for tools a model should call itself, such as one "
        "returning a screenshot. Each is listed as `server__tool`; policy, approvals, audit and redaction "
        "apply as to a snippet's calls. An entry that matches no callable tool is not listed, and `check` "
        "and the log say why.",
    )
    approvals: ApprovalsConfig = Field(
        default_factory=ApprovalsConfig,
        description="How calls the policy marks for approval are asked about on MCP 2026-07-28, where a "
        "run pauses, the client asks the user, and the run resumes in a later round.",
    )
    audit: AuditConfig | None = Field(
        default=None, description="Record every execution and tool call in a JSON Lines file; off if absent."
    )
    http: HttpConfig | None = Field(
        default=None,
        description="Serve MCP over streamable HTTP instead of stdio (also `serve --http`), with its "
        "caps. Loopback only unless allow_remote: HTTP clients are not authenticated yet.",
    )
    auth: AuthConfig | None = Field(
        default=None,
        description="Who may call the gateway over HTTP: static API tokens naming principals, OAuth "
        "bearer JWTs from an issuer, or both.",
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig,
        description="How search_docs ranks tools: lexical, and by meaning too with the `semantic` extra.",
    )
    middleware: list[MiddlewarePath] = Field(
        default_factory=list[str],
        description="The team's own Python code around every child call, as import paths "
        "(`module:callable`) of async callables installed in the gateway's environment, first listed "
        "outermost: `async def m(call, call_next)` sees the tool, the checked arguments, the caller and "
        "the execution id after policy and approval, and may change the arguments (checked again), "
        "refuse (`Refused`) or return another value; an `on_search` attribute filters or annotates "
        "search_docs. One that raises anything else or runs too long fails the call closed. Each is "
        "imported as the config loads: a path that cannot be is a config error.",
    )
    middleware_timeout_seconds: float = Field(
        default=DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_MIDDLEWARE_TIMEOUT_SECONDS,
        description="Seconds each middleware may spend on one call (or one search) in its own code, "
        "not counting call_next; past it the call fails closed. The call's own timeout and the run's "
        "wall-clock budget bound the whole call as well.",
    )
    background: BackgroundConfig = Field(
        default_factory=BackgroundConfig,
        description="Background executions: execute_code as an MCP task (or with `background: true`), "
        "with their own wall time, fuel, how many run at once, and how long a result is kept.",
    )
    state: StateConfig | None = Field(
        default=None,
        description="A Redis (or Valkey) store that replicas share, so that spent approvals, rate windows, "
        "per-caller caps, background runs and learned result shapes hold across them; without it each "
        "process keeps its own (docs/replicas.md).",
    )
    # Values that came from environment variables, with the variable each came from, for redaction;
    # private, so never in repr or dumps.
    _secret_names: dict[str, str] = PrivateAttr(default_factory=dict[str, str])
    _config_dir: Path | None = PrivateAttr(default=None)
    _config_file: Path | None = PrivateAttr(default=None)
    _unavailable_servers: dict[str, str] = PrivateAttr(default_factory=dict[str, str])
    _self_entries: frozenset[str] = PrivateAttr(default=frozenset())
    _notes: tuple[str, ...] = PrivateAttr(default=())
    _command_line: dict[str, Any] = PrivateAttr(default_factory=dict[str, Any])

    @field_validator("mcp_servers")
    @classmethod
    def _leave_out_disabled(cls, servers: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        return {name: server for name, server in servers.items() if not server.disabled}

    @field_validator("expose")
    @classmethod
    def _each_tool_once(cls, names: list[str]) -> list[str]:
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            twice = ", ".join(map(repr, repeated))
            raise ValueError(f"{twice} is listed more than once: list each tool once")
        return names

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

    @property
    def config_file(self) -> Path | None:
        """The file this config was read from (absolute), None for the built-in default or a parsed one.

        Its lockfile sits beside it (`team.json` -> `team.lock.json`; docs/lockfile.md).
        """
        return self._config_file

    @property
    def unavailable_servers(self) -> Mapping[str, str]:
        """Entries left out of `mcp_servers`, each with a one-line reason naming the key.

        An entry using a `${VAR}` that is not set (or a reference the gateway cannot expand), and an
        entry that runs the gateway itself: `mcpServers.github.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set`.
        """
        return MappingProxyType(self._unavailable_servers)

    @property
    def self_entries(self) -> frozenset[str]:
        """The entries of `unavailable_servers` left out because they run this gateway itself (as
        `claude mcp add --scope project` writes into a `.mcp.json`): nothing to fix, only a note."""
        return self._self_entries

    @property
    def command_line(self) -> Mapping[str, Any]:
        """The `mcpServers` entries given on the command line, as written: a reload adds them again."""
        return MappingProxyType(self._command_line)

    @property
    def notes(self) -> tuple[str, ...]:
        """What loading did besides validating, one line each naming the key: entries left out as
        `"disabled": true`, other clients' keys ignored, the gateway's own entry left out."""
        return self._notes

    def set_origin(
        self,
        *,
        secret_names: Mapping[str, str],
        config_dir: Path | None,
        unavailable_servers: Mapping[str, str] | None = None,
        self_entries: frozenset[str] = frozenset(),
        notes: tuple[str, ...] | list[str] = (),
        config_file: Path | None = None,
        command_line: Mapping[str, Any] | None = None,
    ) -> None:
        """Record what `${VAR}` expansion took from the environment, the file (and its directory), the
        children given on the command line, and what loading left out or noted."""
        self._secret_names = dict(secret_names)
        self._config_dir = config_dir
        self._config_file = config_file
        self._unavailable_servers = dict(unavailable_servers or {})
        self._self_entries = self_entries
        self._notes = tuple(notes)
        self._command_line = dict(command_line or {})


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (what `codemode-gateway schema` prints)."""
    schema = GatewayConfig.model_json_schema(by_alias=True)
    head = {"$schema": SCHEMA_DIALECT, "title": schema.pop("title"), "description": schema.pop("description")}
    return head | schema
