"""`codemode-gateway serve`: the gateway over stdio, or over HTTP."""

from __future__ import annotations

import argparse
import gc
import os

from gateway.children import PARENT_ENV_VAR
from gateway.cli._exit_codes import EXIT_OK
from gateway.cli._http import http_settings
from gateway.cli._loading import load_config_for_cli
from gateway.cli._malloc import hold_mmap_threshold
from gateway.cli._reload import reload_options
from gateway.errors import ConfigError
from gateway.server import run_http, run_stdio
from gateway.telemetry import traces_from_environment

__all__ = ["serve_command"]


def serve_command(args: argparse.Namespace) -> int:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP)."""
    parent = os.environ.get(PARENT_ENV_VAR)
    if parent:
        raise ConfigError(
            f"this gateway was started by another codemode-gateway ({PARENT_ENV_VAR}={parent}): an "
            "mcpServers entry of that gateway's config runs the gateway itself; remove that entry"
        )
    config = load_config_for_cli(args.config, args.children)
    http = http_settings(config, args)
    hold_mmap_threshold()  # before the search model loads: its freed blocks go back to the kernel
    with traces_from_environment():  # spans exported as the OTEL_* variables say (the otel extra)
        if http is None:
            run_stdio(config, reload_options(args), started=gc.freeze)
        else:
            run_http(config, http, reload_options(args), started=gc.freeze)
    return EXIT_OK
