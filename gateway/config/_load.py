"""Finding, reading and validating the config file; every problem is one line naming its key."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.children import SERVER_TYPES
from gateway.config._defaults import default_config
from gateway.config._model import GatewayConfig
from gateway.config._variables import expand_servers
from gateway.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "find_config_file",
    "format_validation_error",
    "load_config",
    "parse_config",
    "read_config_data",
]

CONFIG_ENV = "CODEMODE_CONFIG"


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
    expanded, expander = expand_servers(data, os.environ if environ is None else environ)
    problems = list(expander.problems)
    try:
        config = GatewayConfig.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(_report(source, problems + _error_lines(exc))) from None
    if problems:
        raise ConfigError(_report(source, problems))
    config.set_origin(secret_names=expander.secrets, config_dir=None)
    return config


def find_config_file(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The config file to read: `path`, else `$CODEMODE_CONFIG`, else None (the built-in default)."""
    chosen = path or (os.environ if environ is None else environ).get(CONFIG_ENV)
    return Path(chosen) if chosen else None


def load_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> GatewayConfig:
    """Load the config from `path`, else `$CODEMODE_CONFIG`, else the built-in default."""
    file = find_config_file(path, environ)
    if file is None:
        return default_config()
    config = parse_config(read_config_data(file), str(file), environ)
    config.set_origin(secret_names=config.secret_names, config_dir=file.resolve().parent)
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
