"""The blind search evaluation: queries by writers who never saw the code or the catalog, over the
tuning catalog plus servers search was never tuned on. Scored once per change, never tuned on.

Tuning code (`tests/search_eval/tune.py`, `eval_set.py`) must not import this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog import Catalog
from gateway.catalog.evaluation import SearchCase, load_tool_snapshots
from tests.search_eval.eval_set import CATALOG_DIRS

__all__ = [
    "BLIND_CATALOG_DIRS",
    "BLIND_MANIFEST",
    "BLIND_QUERIES",
    "BlindQuery",
    "blind_catalog",
    "blind_servers",
    "load_blind_queries",
]

HERE = Path(__file__).resolve().parent
BLIND_CATALOG_DIRS = (*CATALOG_DIRS, HERE / "catalog")
BLIND_MANIFEST = HERE / "servers.json"
BLIND_QUERIES = HERE / "queries.jsonl"


class BlindQuery(BaseModel):
    """One labelled blind query: `accept` holds qualified tool names, empty when no tool fits."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    writer: str = Field(min_length=1)
    accept: list[str] = Field(default_factory=list[str])
    note: str | None = None  # the labeler's reason, for a disputed label

    def case(self) -> SearchCase:
        """The query as the evaluator's search case."""
        return SearchCase(query=self.query, accept=self.accept, kind=self.kind)


def load_blind_queries(path: Path = BLIND_QUERIES) -> list[BlindQuery]:
    """The queries of a JSON Lines file, one object a line; a malformed line raises naming its number."""
    queries: list[BlindQuery] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            queries.append(BlindQuery.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(f"{path.name}:{number}: {exc}") from None
    return queries


def blind_servers() -> set[str]:
    """The names of the servers search was never tuned on, as their snapshots name them."""
    manifest = json.loads(BLIND_MANIFEST.read_text(encoding="utf-8"))
    return {server["name"] for server in manifest["servers"]}


def blind_catalog() -> Catalog:
    """The whole blind catalog: the 22 tuning servers and the blind ones."""
    return Catalog(load_tool_snapshots(list(BLIND_CATALOG_DIRS)))
