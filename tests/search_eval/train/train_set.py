"""The training set: real servers' `tools/list` snapshots for training search's query adapter, never scored.

Neither the tuning code (`eval_set.py`, `tune.py`) nor the blind set loads these servers, so a model
trained on them can still be measured on servers it never saw.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.types import Tool

from gateway.catalog.evaluation import load_tool_snapshots
from tests.search_eval.blind.blind_set import BlindQuery, load_blind_queries

__all__ = [
    "TRAIN_CATALOG",
    "TRAIN_MANIFEST",
    "TRAIN_QUERIES",
    "train_manifest",
    "train_queries",
    "train_tools",
]

HERE = Path(__file__).resolve().parent
TRAIN_MANIFEST = HERE / "servers.json"
TRAIN_CATALOG = HERE / "catalog"


def train_manifest(path: Path = TRAIN_MANIFEST) -> list[dict[str, Any]]:
    """The server entries of a manifest (this set's unless `path` names another)."""
    return json.loads(path.read_text(encoding="utf-8"))["servers"]


def train_tools() -> dict[str, list[Tool]]:
    """Every training server's tools, by server name."""
    return load_tool_snapshots([TRAIN_CATALOG])


TRAIN_QUERIES = HERE / "queries.jsonl"


def train_queries(path: Path = TRAIN_QUERIES) -> list[BlindQuery]:
    """The labelled requests written for the training servers (none if the file is absent)."""
    return load_blind_queries(path) if path.is_file() else []
