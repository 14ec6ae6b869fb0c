"""The development set written blind: queries by writers who saw only the tuning servers' names,
over the tuning catalog (`eval_set.CATALOG_DIRS`). Search may be tuned on it (README.md)."""

from __future__ import annotations

from pathlib import Path

from tests.search_eval.blind.blind_set import BlindQuery, load_blind_queries

__all__ = ["BLIND_DEV_QUERIES", "blind_dev_queries"]

BLIND_DEV_QUERIES = Path(__file__).resolve().parent / "queries.jsonl"


def blind_dev_queries() -> list[BlindQuery]:
    """The set's 770 labelled queries (writers d to j), in file order."""
    return load_blind_queries(BLIND_DEV_QUERIES)
