"""How well search finds tools: top-k hit rates, MRR and latency over queries with known answers.

A query file is a JSON list of `{"query": ..., "accept": ["server.tool", ...], "kind": ...}`. An
empty `accept` means no tool fits: the query passes when search reports its results as weak (or
finds nothing), which is what makes search_docs say "no tool matches ... well".
`codemode-gateway search-eval` runs this against a config's live children; `make bench` runs it on
the captured catalog in tests/search_eval. With the `semantic` extra, both print the lexical and the
semantic figures side by side (`compare_reports`).
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from mcp.types import ListToolsResult, Tool
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gateway.catalog._catalog import Catalog
from gateway.catalog._search import TUNED, Tuning, search, warm_search
from gateway.shared import format_table

__all__ = [
    "SearchCase",
    "SearchReport",
    "compare_reports",
    "evaluate_search",
    "load_search_cases",
    "load_tool_snapshots",
]

_RANKS_KEPT = 5  # top-5 is the widest figure reported; MRR counts ranks up to this too


class SearchCase(BaseModel):
    """One query and the tools that answer it (`server.tool`); none means no tool fits."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    accept: list[str] = Field(default_factory=list[str])
    kind: str = "general"


_CASES = TypeAdapter(list[SearchCase])


def load_search_cases(path: Path) -> list[SearchCase]:
    """The cases in a query file; pydantic's ValidationError names a malformed one."""
    return _CASES.validate_json(path.read_bytes())


def load_tool_snapshots(directories: Sequence[Path]) -> dict[str, list[Tool]]:
    """Saved `tools/list` results, `<server>.json` each, by server name (later directories win)."""
    return {
        path.stem: ListToolsResult.model_validate_json(path.read_bytes()).tools
        for directory in directories
        for path in sorted(directory.glob("*.json"))
    }


class SearchReport(BaseModel):
    """Hit rates over the answerable queries, the share of unanswerable ones reported weak, latency."""

    tools: int
    queries: int
    answerable: int
    top1: float
    top3: float
    top5: float
    mrr: float
    rejected: float | None  # of the queries without an answer; None when there are none
    p50_ms: float
    p95_ms: float
    by_kind: dict[str, float]  # top-3 per kind (for unanswerable kinds: the rejection rate)
    misses: list[tuple[str, list[str], list[str]]]  # query, accepted, what ranked first instead

    def table(self) -> str:
        """The report as the plain-text table `make bench` and `search-eval` print."""
        return compare_reports({"value": self})

    def figures(self) -> list[tuple[str, str]]:
        """Each figure of the table, named, as text."""
        rows = [
            ("tools", str(self.tools)),
            ("queries (answerable)", f"{self.queries} ({self.answerable})"),
            ("top-1", f"{self.top1:.1%}"),
            ("top-3", f"{self.top3:.1%}"),
            ("top-5", f"{self.top5:.1%}"),
            ("MRR@5", f"{self.mrr:.3f}"),
            ("no-answer queries reported weak", "-" if self.rejected is None else f"{self.rejected:.1%}"),
            ("search p50 / p95", f"{self.p50_ms:.2f} / {self.p95_ms:.2f} ms"),
        ]
        rows += [(f"  top-3, {kind}", f"{rate:.1%}") for kind, rate in sorted(self.by_kind.items())]
        return rows


def compare_reports(reports: Mapping[str, SearchReport]) -> str:
    """Reports on the same queries as one plain-text table, a column each (`lexical`, `semantic`)."""
    columns = [dict(report.figures()) for report in reports.values()]
    names = list(dict.fromkeys(name for column in columns for name, _ in column.items()))
    rows = [(name, *(column.get(name, "-") for column in columns)) for name in names]
    return format_table(("figure", *reports), rows)


def _rank(found: Sequence[str], accept: Sequence[str]) -> int | None:
    return next((i + 1 for i, name in enumerate(found) if name in accept), None)


def evaluate_search(
    catalog: Catalog, cases: Sequence[SearchCase], repeats: int = 3, tuning: Tuning = TUNED
) -> SearchReport:
    """Run every case through `search` and score it; latency is the best of `repeats` per query.

    A catalog with the semantic re-rank is measured with its model loaded (loading it is not a
    query's cost either); if it cannot be loaded, search is lexical and so are the figures.
    """
    if catalog.semantic is not None:
        catalog.semantic.load()
    warm_search(catalog)  # built once per catalog; not a query's cost
    search(catalog, "warm the index", tuning=tuning)
    ranks: list[int | None] = []
    rejections: list[bool] = []
    per_kind: defaultdict[str, list[bool]] = defaultdict(list)
    timings: list[float] = []
    misses: list[tuple[str, list[str], list[str]]] = []
    for case in cases:
        best = float("inf")
        hits = []
        for _ in range(repeats):
            started = time.perf_counter()
            hits = search(catalog, case.query, limit=_RANKS_KEPT, tuning=tuning)
            best = min(best, time.perf_counter() - started)
        timings.append(best * 1000)
        found = [hit.entry.qualified for hit in hits]
        if not case.accept:
            rejected = not hits or hits[0].weak
            rejections.append(rejected)
            per_kind[case.kind].append(rejected)
            if not rejected:
                misses.append((case.query, [], found[:3]))
            continue
        rank = _rank(found, case.accept)
        ranks.append(rank)
        per_kind[case.kind].append(rank is not None and rank <= 3)
        if rank is None or rank > 3:
            misses.append((case.query, case.accept, found[:3]))

    def share(k: int) -> float:
        return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0

    return SearchReport(
        tools=len(catalog),
        queries=len(cases),
        answerable=len(ranks),
        top1=share(1),
        top3=share(3),
        top5=share(5),
        mrr=sum(1 / r for r in ranks if r is not None) / len(ranks) if ranks else 0.0,
        rejected=sum(rejections) / len(rejections) if rejections else None,
        p50_ms=statistics.median(timings) if timings else 0.0,
        p95_ms=statistics.quantiles(timings, n=20)[-1] if len(timings) >= 2 else sum(timings),
        by_kind={kind: sum(passed) / len(passed) for kind, passed in per_kind.items()},
        misses=misses,
    )
