"""`codemode-gateway precompile`: the sandbox component compiled into the cache."""

from __future__ import annotations

import argparse
import sys
import time

from gateway.cli._exit_codes import EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.sandbox import Sandbox

__all__ = ["precompile_command"]


def precompile_command(args: argparse.Namespace) -> int:
    """Compile the component (or find it cached) and say which it was."""
    config = load_config_for_cli(args.config)
    started = time.monotonic()
    with Sandbox(config.sandbox.model_copy(update={"prewarm_instances": 0})) as sandbox:
        what = "compiled" if sandbox.compiled_on_load else "already cached"
    print(
        f"sandbox component {sandbox.component_sha256[:12]}: {what} ({time.monotonic() - started:.1f} s)",
        file=sys.stderr,
    )
    return EXIT_OK
