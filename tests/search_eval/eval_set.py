"""The search evaluation set: the 282-tool catalog of 22 real servers and the queries about it.

`queries.json` is the development set (search's weights and synonym table are tuned on it);
`holdout.json` was written separately and is never tuned on: it shows whether the tuning carries
over to queries nobody looked at while tuning.
"""

from __future__ import annotations

from pathlib import Path

from gateway.catalog import Catalog
from gateway.catalog.evaluation import SearchCase, load_search_cases, load_tool_snapshots
from tests.real_servers import TOOL_SNAPSHOTS

__all__ = ["CATALOG_DIRS", "DEV_QUERIES", "HOLDOUT_QUERIES", "eval_cases", "eval_catalog"]

HERE = Path(__file__).resolve().parent
CATALOG_DIRS = (TOOL_SNAPSHOTS, HERE / "catalog")
DEV_QUERIES = HERE / "queries.json"
HOLDOUT_QUERIES = HERE / "holdout.json"


def eval_catalog() -> Catalog:
    """Every captured server's tools: the five default children and the seventeen others."""
    return Catalog(load_tool_snapshots(list(CATALOG_DIRS)))


def eval_cases(path: Path = DEV_QUERIES) -> list[SearchCase]:
    """The queries in one of the set's files."""
    return load_search_cases(path)
