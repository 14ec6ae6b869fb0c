"""How well the "no tool fits" rule (`FIT_WEIGHTS`) tells the queries no tool serves from the others,
on writers the query adapter was not trained on.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.fit_rule_experiment [--weights 1.15 0.7 0.75 0.12]

For each of blind_dev's seven writers (d to j), the adapter is trained (the shipped settings) on the
development set and the six other writers, and the writer's queries are searched with it (the whole
query, as `adapter_experiment` does); the development set itself is scored by the adapter trained
on everything, so its answerable queries read better than they would unseen. For each query the
best hit's evidence (its fused score, the next tool's, its cosine, the share of the query's words it
matched) is read as `Hit.weak` reads it. Printed: the no-tool queries reported weak and the
answerable ones reported weak, per writer and pooled, for the shipped weights and those given.
Only the development sets are read.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from gateway.catalog._search import FIT_WEIGHTS
from tests.search_eval.adapter_experiment import adapted, case_writers, subset
from tests.search_eval.train_adapter import SETTINGS, capture_run, train, training_cases


def adapted_cosines(run: dict[str, Any], weights: np.ndarray) -> np.ndarray:
    """Each query's cosine to each tool through the adapter `weights`."""
    queries = run["query_vectors"]
    moved = queries + queries @ weights.astype(np.float64).T
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    return moved @ run["tools"].T


def evidence(run: dict[str, Any], weights: np.ndarray, rows: list[int]) -> dict[int, tuple[np.ndarray, bool]]:
    """Per row: the best hit's (score, next score, cosine, words matched), and whether it is never weak
    (every word matched)."""
    score, cosine = adapted(run, weights), adapted_cosines(run, weights)
    out: dict[int, tuple[np.ndarray, bool]] = {}
    for row in rows:
        order = sorted(np.argsort(-score[row], kind="stable")[:10], key=lambda i: i not in run["first"][row])
        best = order[0]
        values = np.array(
            [score[row, best], score[row, order[1]], cosine[row, best], run["coverage"][row, best]]
        )
        out[row] = (values, best in run["full_cover"][row])
    return out


def weak(run: dict[str, Any], row: int, values: np.ndarray, full: bool, fit: np.ndarray) -> bool:
    """`Hit.weak` for the best hit of `row` with these weights."""
    return not full and (run["elsewhere"][row] or float(values @ fit) < 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--weights", type=float, nargs=4, help="weights to compare with FIT_WEIGHTS")
    args = parser.parse_args()
    run, data = capture_run(training_cases())
    cases = run["cases"]
    writers = case_writers(cases)
    rows = list(range(len(cases)))
    everything = np.ones(len(run["servers"]), dtype=bool)
    found = evidence(run, train(data, SETTINGS), [row for row in rows if writers[row] == ""])
    for writer in sorted(set(writers) - {""}):
        trained = [row for row in rows if writers[row] != writer]
        weights = train(subset(data, run, trained, everything), SETTINGS)
        found |= evidence(run, weights, [row for row in rows if writers[row] == writer])
    rules = {"FIT_WEIGHTS": FIT_WEIGHTS} | ({"given": tuple(args.weights)} if args.weights else {})
    groups = {"development": [""], "blind_dev": list("defghij"), **{w: [w] for w in "defghij"}}
    for name, fit in rules.items():
        print(f"{name} {fit}: no-tool reported weak / answerable reported weak")
        for group, members in groups.items():
            chosen = [row for row in rows if writers[row] in members]
            flags = {row: weak(run, row, *found[row], np.asarray(fit)) for row in chosen}
            nones = [row for row in chosen if not cases[row].accept]
            answerable = [row for row in chosen if cases[row].accept]
            share = [100 * sum(flags[r] for r in part) / max(len(part), 1) for part in (nones, answerable)]
            print(
                f"  {group:12s} {share[0]:5.1f}% of {len(nones):3d} / {share[1]:5.1f}% of {len(answerable)}"
            )


if __name__ == "__main__":
    main()
