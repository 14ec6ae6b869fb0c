"""`codemode-gateway sandbox-test`: the escape suite against the config's limits."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli._loading import load_config_for_cli
from gateway.escape import CATEGORIES, sandbox_test

__all__ = ["add_sandbox_test_arguments", "sandbox_test_command"]


def add_sandbox_test_arguments(parser: argparse.ArgumentParser) -> None:
    """The `sandbox-test` subcommand's options."""
    parser.add_argument("--config", help="config file whose `sandbox` limits to test (default: built-in)")
    parser.add_argument("--junit-xml", metavar="PATH", help="also write the results as JUnit XML")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        choices=CATEGORIES,
        metavar="CATEGORY",
        help=f"run only these categories: {', '.join(CATEGORIES)}",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and what contains each; run none")


def sandbox_test_command(args: argparse.Namespace) -> int:
    """`sandbox-test`: 0 when every case is contained, 1 if any is not."""
    config = load_config_for_cli(args.config)
    junit = Path(args.junit_xml) if args.junit_xml else None
    return sandbox_test(config.sandbox, only=args.only, junit=junit, list_only=args.list)
