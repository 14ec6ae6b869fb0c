"""`codemode-gateway serve`: the gateway over stdio, or over HTTP."""

from __future__ import annotations

import argparse
import gc
import os
from contextlib import ExitStack

from gateway.children import PARENT_ENV_VAR
from gateway.cli._exit_codes import EXIT_OK
from gateway.cli._http import http_settings
from gateway.cli._loading import load_config_for_cli
from gateway.cli._malloc import hold_mmap_threshold
from gateway.cli._reload import reload_options
from gateway.config import find_config_file, read_config_data
from gateway.errors import ConfigError
from gateway.server import run_http, run_refused_config, run_stdio
from gateway.shared import as_object
from gateway.telemetry import traces_from_environment

__all__ = ["serve_command"]


def serve_command(args: argparse.Namespace) -> int:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP). A refused config
    ends the command with its error: over stdio, once the client that was told why has left."""
    parent = os.environ.get(PARENT_ENV_VAR)
    if parent:
        raise ConfigError(
            f"this gateway was started by another codemode-gateway ({PARENT_ENV_VAR}={parent}): an "
            "mcpServers entry of that gateway's config runs the gateway itself; remove that entry"
        )
    with ExitStack() as serving:
        try:
            config = load_config_for_cli(args.config, args.children)
            http = http_settings(config, args)
            # Spans exported as the OTEL_* variables say (the otel extra); a bad exporter is a refused config.
            serving.enter_context(traces_from_environment())
        except ConfigError as error:
            if not _over_stdio(args):
                raise
            # Exiting would show the client only "failed to connect": it is told why instead.
            run_refused_config(error, find_config_file(args.config))
            raise
        hold_mmap_threshold()  # before the search model loads: its freed blocks go back to the kernel
        if http is None:
            run_stdio(config, reload_options(args), started=gc.freeze)
        else:
            run_http(config, http, reload_options(args), started=gc.freeze)
    return EXIT_OK


def _over_stdio(args: argparse.Namespace) -> bool:
    """Whether `serve` was meant to serve over stdio, as far as a refused config tells: `--stdio`, or
    neither HTTP flags nor an `http` section in the file (a file that does not parse names none)."""
    if args.stdio:
        return True
    if args.http or args.host is not None or args.port is not None:
        return False
    file = find_config_file(args.config)
    if file is None:
        return True
    try:
        data = as_object(read_config_data(file))
    except ConfigError:
        return True
    return data is None or data.get("http") is None
