"""Score search on the development set written blind, over the tuning catalog (282 tools).

    .venv/bin/python -m tests.search_eval.blind_dev.score              # the default config
    .venv/bin/python -m tests.search_eval.blind_dev.score --lexical    # also lexical search alone
    .venv/bin/python -m tests.search_eval.blind_dev.score --misses     # also list the misses

Unlike the blind set, this one may be tuned on: its figures per writer say whether a change helps
more than one way of asking (README.md).
"""

from __future__ import annotations

import argparse
import sys

from gateway.catalog import Catalog
from gateway.catalog.config import SearchConfig
from gateway.catalog.docs import semantic_search
from gateway.catalog.evaluation import evaluate_search, load_tool_snapshots
from gateway.shared._display import format_table
from tests.search_eval.blind.blind_set import BlindQuery
from tests.search_eval.blind.score import print_scores
from tests.search_eval.blind_dev.dev_set import blind_dev_queries
from tests.search_eval.eval_set import CATALOG_DIRS


def _catalogs(with_lexical: bool) -> dict[str, Catalog]:
    """The default config's search, and lexical search alone beside it when asked for."""
    tools = load_tool_snapshots(list(CATALOG_DIRS))
    catalogs = {"default": Catalog(tools, semantic=semantic_search(SearchConfig().semantic))}
    if with_lexical:
        catalogs["lexical"] = Catalog(tools)
    return catalogs


def _per_writer(catalog: Catalog, queries: list[BlindQuery]) -> str:
    """Top-1/3/5 and the no-tool queries reported weak, per writer."""
    writers: dict[str, list[BlindQuery]] = {}
    for query in queries:
        writers.setdefault(query.writer, []).append(query)
    rows: list[tuple[str, ...]] = []
    for writer, members in sorted(writers.items()):
        report = evaluate_search(catalog, [q.case() for q in members], repeats=1)
        weak = "-" if report.rejected is None else f"{report.rejected:.1%}"
        rows.append(
            (
                f"writer {writer} ({len(members)})",
                f"{report.top1:.1%}",
                f"{report.top3:.1%}",
                f"{report.top5:.1%}",
                weak,
            )
        )
    return format_table(("queries", "top-1", "top-3", "top-5", "no tool weak"), rows)


def main(argv: list[str]) -> int:
    """Print the figures of the default config (and lexical search alone when asked)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lexical", action="store_true", help="also score lexical search alone")
    parser.add_argument("--misses", action="store_true", help="also list the queries search got wrong")
    args = parser.parse_args(argv)
    queries = blind_dev_queries()
    catalogs = _catalogs(args.lexical)
    print_scores(catalogs, queries, _per_writer(catalogs["default"], queries), misses=args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
