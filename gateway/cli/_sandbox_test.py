"""`codemode-gateway sandbox-test`: the escape suite against the config's limits."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli._loading import load_config_for_cli

__all__ = ["sandbox_test_command"]


def sandbox_test_command(args: argparse.Namespace) -> int:
    """`sandbox-test`: 0 when every case is contained, 1 if any is not."""
    from gateway.escape import sandbox_test  # the suite: only this command builds it

    config = load_config_for_cli(args.config)
    junit = Path(args.junit_xml) if args.junit_xml else None
    return sandbox_test(config.sandbox, only=args.only, junit=junit, list_only=args.list)
