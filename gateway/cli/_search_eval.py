"""`codemode-gateway search-eval`: how well search finds your tools, on your children or on snapshots."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
from pydantic import ValidationError

from gateway.catalog import Catalog, evaluate_search, load_search_cases, load_tool_snapshots
from gateway.cli._check import check_children
from gateway.cli._exit_codes import EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.errors import ConfigError
from gateway.policy import Policy

__all__ = ["add_search_eval_arguments", "search_eval_command"]


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


def _catalog(args: argparse.Namespace) -> Catalog:
    if args.snapshots:
        return Catalog(load_tool_snapshots([Path(d) for d in args.snapshots]))
    config = load_config_for_cli(args.config)
    statuses, tools = anyio.run(check_children, config)
    catalog = Catalog(tools, statuses)
    return catalog.filtered(Policy(config.policy).visible)


def search_eval_command(args: argparse.Namespace) -> int:
    """`search-eval`: print top-1/3/5, MRR, the no-answer rejection rate and search latency."""
    try:
        cases = load_search_cases(Path(args.queries))
    except OSError as exc:
        raise ConfigError(f"cannot read the query file: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"{args.queries} is not a list of search cases: {exc}") from None
    report = evaluate_search(_catalog(args), cases)
    print(report.table())
    if args.misses:
        for query, accept, found in report.misses:
            wanted, got = " or ".join(accept) or "nothing", ", ".join(found) or "nothing"
            print(f"miss: {query!r}: wanted {wanted}; got {got}")
    return EXIT_OK
