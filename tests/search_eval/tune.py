"""Tune search's weights on the development queries: coordinate search, one weight at a time.

    .venv/bin/python -m tests.search_eval.tune

Prints the best `Tuning` found and its figures on the development and held-out sets. Copy the
values into `TUNED` (gateway/catalog/_search.py) only if the held-out figures hold up too; the
held-out set is reported, never optimised.
"""

from __future__ import annotations

import dataclasses

from gateway.catalog import Catalog
from gateway.catalog._search import TUNED, Tuning
from gateway.catalog.evaluation import SearchCase, SearchReport, evaluate_search
from tests.search_eval.eval_set import HOLDOUT_QUERIES, eval_cases, eval_catalog

_FACTORS = (0.0, 0.25, 0.5, 0.75, 1.33, 2.0, 4.0)
_ROUNDS = 3


def objective(report: SearchReport) -> float:
    """Top-3 first; top-5, MRR and telling no-answer queries apart break ties."""
    return report.top3 + 0.3 * report.top5 + 0.3 * report.mrr + 0.1 * (report.rejected or 0.0)


def _score(catalog: Catalog, cases: list[SearchCase], tuning: Tuning) -> float:
    return objective(evaluate_search(catalog, cases, repeats=1, tuning=tuning))


def tune(catalog: Catalog, cases: list[SearchCase], start: Tuning = TUNED) -> Tuning:
    """The best tuning coordinate search finds from `start`."""
    best, best_score = start, _score(catalog, cases, start)
    for _ in range(_ROUNDS):
        improved = False
        for field in dataclasses.fields(Tuning):
            current = getattr(best, field.name)
            for factor in _FACTORS:
                value = current * factor
                value = max(int(value), 1) if isinstance(current, int) else round(value, 3) or factor
                candidate = dataclasses.replace(best, **{field.name: value})
                score = _score(catalog, cases, candidate)
                if score > best_score + 1e-9:
                    best, best_score, improved = candidate, score, True
        if not improved:
            break
    return best


def main() -> None:
    catalog = eval_catalog()
    dev, holdout = eval_cases(), eval_cases(HOLDOUT_QUERIES)
    best = tune(catalog, dev)
    print(best)
    for name, tuning in (("current", TUNED), ("tuned", best)):
        for label, cases in (("dev", dev), ("holdout", holdout)):
            report = evaluate_search(catalog, cases, repeats=1, tuning=tuning)
            print(
                f"{name:8} {label:8} top1 {report.top1:.1%} top3 {report.top3:.1%} top5 {report.top5:.1%} "
                f"mrr {report.mrr:.3f} rejected {report.rejected or 0:.1%}"
            )


if __name__ == "__main__":
    main()
