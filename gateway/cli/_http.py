"""`serve`'s transport: stdio (the default), or streamable HTTP from `--http` or the config's `http`."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from gateway.config import GatewayConfig
from gateway.config.server import AUTHENTICATED, HttpConfig
from gateway.errors import ConfigError

__all__ = ["http_settings"]


def http_settings(config: GatewayConfig, args: argparse.Namespace) -> HttpConfig | None:
    """The HTTP settings to serve with, or None for stdio; `--host` and `--port` override the config's."""
    if args.stdio:
        if args.host is not None or args.port is not None:
            raise ConfigError("--host and --port go with --http, not --stdio")
        return None
    if not args.http and config.http is None:
        if args.host is not None or args.port is not None:
            raise ConfigError("--host and --port go with --http (or an `http` section in the config)")
        return None
    base = config.http or HttpConfig()
    overrides: dict[str, Any] = {}
    if args.host is not None:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    if not overrides:
        return base
    try:
        context = {AUTHENTICATED: config.auth is not None}
        return HttpConfig.model_validate(base.model_dump(exclude_unset=True) | overrides, context=context)
    except ValidationError as exc:
        flags = " ".join(f"--{key} {value}" for key, value in overrides.items())
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) + ': ' if error['loc'] else ''}"
            f"{error['msg'].removeprefix('Value error, ')}"
            for error in exc.errors()
        )
        raise ConfigError(f"serve {flags}: {problems}") from exc
