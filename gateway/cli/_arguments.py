"""Each command's arguments: defined, parsed and refused before any command's module is imported."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import overload

__all__ = [
    "add_http_arguments",
    "add_reload_arguments",
    "add_sandbox_test_arguments",
    "add_search_eval_arguments",
    "add_serve_reload_arguments",
]

DEFAULT_WAIT_SECONDS = 60.0


def add_http_arguments(serve: argparse.ArgumentParser) -> None:
    """`--http`, `--host`, `--port` and `--stdio` on `serve`."""
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument(
        "--http",
        action="store_true",
        help="serve MCP over streamable HTTP (the config's `http` section, or its defaults)",
    )
    transport.add_argument(
        "--stdio", action="store_true", help="serve over stdio even if the config has an `http` section"
    )
    serve.add_argument("--host", help="with --http: the address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="with --http: the TCP port (default 8080; 0 takes a free one)"
    )


def add_serve_reload_arguments(serve: argparse.ArgumentParser) -> None:
    """`--pid-file` and `--no-watch` on `serve`."""
    serve.add_argument(
        "--pid-file",
        help="write the gateway's pid here (locked while it serves), for `codemode-gateway reload`",
    )
    serve.add_argument(
        "--no-watch",
        action="store_true",
        help="do not reload when the config file changes (SIGHUP and `reload` still do)",
    )


def add_reload_arguments(reload: argparse.ArgumentParser) -> None:
    """The `reload` command's options."""
    reload.add_argument(
        "--pid-file", required=True, help="the pid file the gateway was started with (serve --pid-file)"
    )
    reload.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        help=f"seconds to wait for the gateway's answer (default {DEFAULT_WAIT_SECONDS:g})",
    )
    reload.add_argument("--json", action="store_true", help="print the result as one JSON object")


def add_search_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's arguments."""
    parser.add_argument(
        "queries", help='a JSON list of {"query": ..., "accept": ["server.tool", ...], "kind": ...}'
    )
    parser.add_argument("--config", help="config file whose children (and policy) make the catalog")
    parser.add_argument(
        "--snapshots",
        nargs="+",
        metavar="DIR",
        help="search saved tools/list results (one <server>.json per server) instead of live children",
    )
    parser.add_argument("--misses", action="store_true", help="also list the queries search got wrong")


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
