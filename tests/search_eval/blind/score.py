"""Score search on the blind set: every query of queries.jsonl over the whole blind catalog.

    .venv/bin/python -m tests.search_eval.blind.score              # the default config (lexical)
    .venv/bin/python -m tests.search_eval.blind.score --semantic   # also with the semantic re-rank
    .venv/bin/python -m tests.search_eval.blind.score --misses     # also list the misses

Run it once per change to search and report the figures; never tune on them (see README.md).
"""

from __future__ import annotations

import argparse
import sys

from gateway.catalog import Catalog
from gateway.catalog.config import SearchConfig
from gateway.catalog.docs import semantic_search
from gateway.catalog.evaluation import SearchReport, compare_reports, evaluate_search, load_tool_snapshots
from gateway.shared._display import format_table
from tests.search_eval.blind.blind_set import (
    BLIND_CATALOG_DIRS,
    BLIND_QUERIES,
    BlindQuery,
    blind_servers,
    load_blind_queries,
)


def _catalogs(with_semantic: bool) -> dict[str, Catalog]:
    """The default config's search, and the semantic re-rank beside it when asked for."""
    tools = load_tool_snapshots(list(BLIND_CATALOG_DIRS))
    default = semantic_search(SearchConfig().semantic)
    catalogs = {"default": Catalog(tools, semantic=default)}
    if with_semantic:
        catalogs["semantic"] = Catalog(tools, semantic=semantic_search("on"))
    return catalogs


def _parts(catalog: Catalog, queries: list[BlindQuery]) -> dict[str, list[BlindQuery]]:
    """The queries split by who answers them: a server search was tuned on, a blind one, or none."""
    blind = blind_servers()
    server_of = {entry.qualified: entry.server_name for entry in catalog}
    parts: dict[str, list[BlindQuery]] = {"tuned servers": [], "new servers": [], "no tool": []}
    for query in queries:
        servers = {server_of.get(name) for name in query.accept}
        if not query.accept:
            parts["no tool"].append(query)
        elif servers & blind:
            parts["new servers"].append(query)
        else:
            parts["tuned servers"].append(query)
    return parts


def _breakdown(catalog: Catalog, queries: list[BlindQuery]) -> str:
    """Top-3 (or, for no-tool queries, the share reported weak) per writer and per part."""
    groups: dict[str, list[BlindQuery]] = {}
    for query in queries:
        groups.setdefault(f"writer {query.writer}", []).append(query)
    groups.update(_parts(catalog, queries))
    rows: list[tuple[str, str, str]] = []
    for name, members in groups.items():
        if not members:
            continue
        report = evaluate_search(catalog, [q.case() for q in members], repeats=1)
        answerable = f"top-3 {report.top3:.1%}" if report.answerable else "-"
        weak = "-" if report.rejected is None else f"weak {report.rejected:.1%}"
        rows.append((f"{name} ({len(members)})", answerable, weak))
    return format_table(("queries", "answerable", "no tool"), rows)


def main(argv: list[str]) -> int:
    """Print the blind figures; exit 1 when there is no labelled query to score yet."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--semantic", action="store_true", help="also score the semantic re-rank")
    parser.add_argument("--misses", action="store_true", help="also list the queries search got wrong")
    args = parser.parse_args(argv)
    queries = load_blind_queries(BLIND_QUERIES)
    if not queries:
        print(f"{BLIND_QUERIES.name} has no queries yet: label the writers' files first (README.md)")
        return 1
    catalogs = _catalogs(args.semantic)
    print_scores(catalogs, queries, _breakdown(catalogs["default"], queries), misses=args.misses)
    return 0


def print_scores(
    catalogs: dict[str, Catalog], queries: list[BlindQuery], breakdown: str, *, misses: bool
) -> None:
    """Print each catalog's figures side by side, then `breakdown`, then (with `misses`) every miss."""
    reports: dict[str, SearchReport] = {
        name: evaluate_search(catalog, [q.case() for q in queries]) for name, catalog in catalogs.items()
    }
    print(compare_reports(reports))
    print()
    print(breakdown)
    if misses:
        for name, report in reports.items():
            for query, accept, found in report.misses:
                wanted, got = " or ".join(accept) or "nothing", ", ".join(found) or "nothing"
                print(f"miss ({name}): {query!r}: wanted {wanted}; got {got}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
