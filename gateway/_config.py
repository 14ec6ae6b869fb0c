"""The gateway's config file: child servers (`mcpServers`, as Claude Code writes it) and `sandbox` limits."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
)

from gateway._audit import AuditConfig
from gateway.children import (
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    SERVER_TYPES,
    HttpServer,
    RestartPolicy,
    ServerConfig,
    SseServer,
    StdioServer,
)
from gateway.errors import ConfigError
from gateway.policy import PolicyConfig
from gateway.sandbox import SandboxLimits

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "NPM_SERVER_PINS",
    "GatewayConfig",
    "HttpServer",
    "RestartPolicy",
    "ServerConfig",
    "SseServer",
    "StdioServer",
    "config_json_schema",
    "default_config",
    "format_validation_error",
    "load_config",
    "parse_config",
    "read_config_data",
]

CONFIG_ENV = "CODEMODE_CONFIG"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# The npm servers of the built-in default, pinned; the Makefile installs the same versions for the tests.
NPM_SERVER_PINS = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
# `npx -y` may have to fetch the package on first use, which takes longer than starting it.
_NPX_STARTUP_TIMEOUT_SECONDS = 120.0


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


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (what `codemode-gateway schema` prints)."""
    schema = GatewayConfig.model_json_schema(by_alias=True)
    head = {"$schema": SCHEMA_DIALECT, "title": schema.pop("title"), "description": schema.pop("description")}
    return head | schema


# ---- ${VAR} expansion ---------------------------------------------------------------------------

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EXPANDED_STRINGS = ("command", "cwd", "url")
_EXPANDED_LISTS = ("args",)
_EXPANDED_MAPS = ("env", "headers")


class _Expander:
    """Expands `${VAR}` / `${VAR:-default}`, recording where variables are missing and what was secret."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.problems: list[str] = []
        self.secrets: dict[str, str] = {}  # value -> the variable it came from

    def expand(self, value: Any, where: str) -> Any:
        if not isinstance(value, str):
            return value  # validation reports the wrong type
        matches = list(_VAR.finditer(value))
        if value.count("${") != len(matches):
            self.problems.append(
                f"{where}: malformed variable reference (write ${{NAME}} or ${{NAME:-default}})"
            )
            return value
        return _VAR.sub(lambda match: self._lookup(match, where), value)

    def _lookup(self, match: re.Match[str], where: str) -> str:
        name, default = match.group(1), match.group(2)
        found = self.environ.get(name)
        if found is None or (found == "" and default is not None):  # `:-` also covers empty, as in the shell
            if default is None:
                self.problems.append(f"{where}: ${{{name}}} is not set")
                return match.group(0)
            return default
        if found:
            self.secrets.setdefault(found, name)
        return found

    def server(self, entry: dict[str, Any], where: str) -> dict[str, Any]:
        out = dict(entry)
        for key in _EXPANDED_STRINGS:
            if key in out:
                out[key] = self.expand(out[key], f"{where}.{key}")
        for key in _EXPANDED_LISTS:
            if (items := _as_list(out.get(key))) is not None:
                out[key] = [self.expand(item, f"{where}.{key}[{i}]") for i, item in enumerate(items)]
        for key in _EXPANDED_MAPS:
            if (pairs := _as_dict(out.get(key))) is not None:
                out[key] = {k: self.expand(v, f"{where}.{key}.{k}") for k, v in pairs.items()}
        return out


def _as_dict(value: Any) -> dict[str, Any] | None:
    """`value` if it is a JSON object (keys of parsed JSON are strings), else None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _as_list(value: Any) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


def _expand_servers(data: Any, environ: Mapping[str, str]) -> tuple[Any, _Expander]:
    expander = _Expander(environ)
    top = _as_dict(data)
    servers = _as_dict(top.get("mcpServers")) if top is not None else None
    if top is None or servers is None:
        return data, expander  # validation reports the wrong shape
    expanded: dict[str, Any] = {}
    for name, entry in servers.items():
        fields = _as_dict(entry)
        expanded[name] = expander.server(fields, f"mcpServers.{name}") if fields is not None else entry
    return {**top, "mcpServers": expanded}, expander


# ---- errors, parsing, loading -------------------------------------------------------------------


def _location(loc: tuple[int | str, ...]) -> str:
    if len(loc) > 2 and loc[0] == "mcpServers" and loc[2] in SERVER_TYPES.values():
        loc = loc[:2] + loc[3:]  # drop the union's tag: users wrote `mcpServers.x.args`, not `.stdio.args`
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "." in part and path:  # a namespaced tool name as a key: policy.tools["git.git_log"]
            path += f"[{json.dumps(part)}]"
        else:
            path += f".{part}" if path else part
    return path or "(top level)"


def _error_lines(exc: ValidationError) -> list[str]:
    return [
        f"{_location(error['loc'])}: {error['msg'].removeprefix('Value error, ')}"
        for error in exc.errors(include_url=False)
    ]


def _report(source: str, problems: list[str]) -> str:
    return "\n".join([f"{source}: {len(problems)} invalid setting(s)", *(f"  {line}" for line in problems)])


def format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per bad key, `path.to[2].key: what is wrong`, never a traceback."""
    return _report(source, _error_lines(exc))


def parse_config(data: Any, source: str, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Validate already-parsed JSON as a config, expanding `${VAR}` in the server entries."""
    expanded, expander = _expand_servers(data, os.environ if environ is None else environ)
    problems = list(expander.problems)
    try:
        config = GatewayConfig.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(_report(source, problems + _error_lines(exc))) from None
    if problems:
        raise ConfigError(_report(source, problems))
    config._secret_names = dict(expander.secrets)  # pyright: ignore[reportPrivateUsage]
    return config


def _git_toplevel(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():  # a directory, or a file in worktrees and submodules
            return directory
    return None


def default_config(cwd: Path | None = None) -> GatewayConfig:
    """The built-in children: time and git from this venv, plus memory and everything when npx exists."""
    servers: dict[str, Any] = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}
    git_args = ["-m", "mcp_server_git"]
    repository = _git_toplevel((cwd or Path.cwd()).resolve())
    if repository is not None:
        git_args += ["--repository", str(repository)]
    servers["git"] = {"command": sys.executable, "args": git_args}
    if shutil.which("npx"):
        for name in ("memory", "everything"):
            package = f"@modelcontextprotocol/server-{name}"
            servers[name] = {
                "command": "npx",
                "args": ["-y", f"{package}@{NPM_SERVER_PINS[package]}"],
                "startup_timeout_seconds": _NPX_STARTUP_TIMEOUT_SECONDS,
            }
    return GatewayConfig.model_validate({"mcpServers": servers})


def load_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> GatewayConfig:
    """Load the config from `path`, else `$CODEMODE_CONFIG`, else the built-in default."""
    environ = os.environ if environ is None else environ
    chosen = path or environ.get(CONFIG_ENV)
    if not chosen:
        return default_config()
    file = Path(chosen)
    config = parse_config(read_config_data(file), str(file), environ)
    config._config_dir = file.resolve().parent  # pyright: ignore[reportPrivateUsage]
    return config


def read_config_data(file: Path) -> Any:
    """A config file's JSON as written, before validation and `${VAR}` expansion."""
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {file}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
