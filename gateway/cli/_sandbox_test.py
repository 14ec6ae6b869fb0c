"""`codemode-gateway sandbox-test`: the escape suite against the config's limits."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from gateway.cli._loading import load_config_for_cli

__all__ = ["add_sandbox_test_arguments", "sandbox_test_command"]


class _Categories(Sequence[str]):
    """The suite's categories, read when argparse first asks: importing the suite builds every case,
    which no other command (`serve` above all) should wait for."""

    def _names(self) -> tuple[str, ...]:
        from gateway.escape import CATEGORIES  # the suite: only this command builds it

        return CATEGORIES

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()


def add_sandbox_test_arguments(parser: argparse.ArgumentParser) -> None:
    """The `sandbox-test` subcommand's options."""
    parser.add_argument("--config", help="config file whose `sandbox` limits to test (default: built-in)")
    parser.add_argument("--junit-xml", metavar="PATH", help="also write the results as JUnit XML")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        choices=_Categories(),
        metavar="CATEGORY",
        help="run only these categories: %(choices)s",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and what contains each; run none")


def sandbox_test_command(args: argparse.Namespace) -> int:
    """`sandbox-test`: 0 when every case is contained, 1 if any is not."""
    from gateway.escape import sandbox_test  # see _Categories

    config = load_config_for_cli(args.config)
    junit = Path(args.junit_xml) if args.junit_xml else None
    return sandbox_test(config.sandbox, only=args.only, junit=junit, list_only=args.list)
