"""The gateway's config file: `sandbox` limits now; child servers and policy join it later."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway._errors import ConfigError
from gateway._limits import SandboxLimits

__all__ = ["CONFIG_ENV", "GatewayConfig", "format_validation_error", "load_config"]

CONFIG_ENV = "CODEMODE_CONFIG"


class GatewayConfig(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str | None = Field(default=None, alias="$schema", description="JSON Schema URL or path, for editors.")
    sandbox: SandboxLimits = Field(default_factory=SandboxLimits)


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per bad key, `path.to[2].key: what is wrong`, never a traceback."""
    lines = [f"{source}: {exc.error_count()} invalid setting(s)"]
    for error in exc.errors(include_url=False):
        lines.append(f"  {_location(error['loc'])}: {error['msg']}")
    return "\n".join(lines)


def parse_config(data: Any, source: str) -> GatewayConfig:
    """Validate already-parsed JSON as a config."""
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None


def load_config(path: str | os.PathLike[str] | None = None) -> GatewayConfig:
    """Load the config from `path`, else `$CODEMODE_CONFIG`, else the built-in default."""
    chosen = path or os.environ.get(CONFIG_ENV)
    if not chosen:
        return GatewayConfig()
    file = Path(chosen)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {file}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return parse_config(data, str(file))
