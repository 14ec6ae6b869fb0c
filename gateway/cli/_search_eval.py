"""`codemode-gateway search-eval`: how well search finds your tools, on your children or on snapshots.

With the `semantic` extra installed, lexical and semantic search are measured side by side on the same
catalog, whatever the config's `search.semantic` says (it is what tells whether to turn the re-rank on).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
from pydantic import ValidationError

from gateway.catalog import Catalog
from gateway.catalog.docs import SemanticSearch, semantic_search
from gateway.catalog.evaluation import (
    compare_reports,
    evaluate_search,
    load_search_cases,
    load_tool_snapshots,
)
from gateway.cli._check import check_children
from gateway.cli._exit_codes import EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.errors import ConfigError
from gateway.policy import Policy

__all__ = ["search_eval_command"]


def _catalogs(args: argparse.Namespace) -> dict[str, Catalog]:
    """The lexical catalog, and the same with the semantic re-rank when its model can run here."""
    semantic = semantic_search("auto")
    if args.snapshots:
        tools = load_tool_snapshots([Path(d) for d in args.snapshots])

        def build(with_model: SemanticSearch | None) -> Catalog:
            return Catalog(tools, semantic=with_model)
    else:
        config = load_config_for_cli(args.config)
        statuses, live = anyio.run(check_children, config)
        visible = Policy(config.policy).visible

        def build(with_model: SemanticSearch | None) -> Catalog:
            return Catalog(live, statuses, semantic=with_model).filtered(visible)

    catalogs = {"lexical": build(None)}
    if semantic is not None:
        catalogs["semantic"] = build(semantic)
    return catalogs


def search_eval_command(args: argparse.Namespace) -> int:
    """`search-eval`: print top-1/3/5, MRR, the no-answer rejection rate and search latency."""
    try:
        cases = load_search_cases(Path(args.queries))
    except OSError as exc:
        raise ConfigError(f"cannot read the query file: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"{args.queries} is not a list of search cases: {exc}") from None
    reports = {name: evaluate_search(catalog, cases) for name, catalog in _catalogs(args).items()}
    print(compare_reports(reports) if len(reports) > 1 else reports["lexical"].table())
    if args.misses:
        for name, report in reports.items():
            label = f"miss ({name})" if len(reports) > 1 else "miss"
            for query, accept, found in report.misses:
                wanted, got = " or ".join(accept) or "nothing", ", ".join(found) or "nothing"
                print(f"{label}: {query!r}: wanted {wanted}; got {got}")
    return EXIT_OK
