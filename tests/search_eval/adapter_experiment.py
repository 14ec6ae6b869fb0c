"""How well the query adapter generalizes: cross-validation that holds out servers, then writers.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.adapter_experiment [--penalty 0.03] [--steps 300]

- **Leave servers out**: the 22 tuning servers in 5 folds (a fixed shuffle); for each fold, the
  adapter is trained on the queries none of whose accepted tools is on the fold's servers, with
  only the other servers' tools in the softmax (the fold's servers did not exist for it, as the
  blind set's new servers do not exist for the shipped adapter), then scored on the queries whose
  first accepted tool is on the fold's servers, over the whole catalog.
- **Leave one writer out**: for each of blind_dev's seven writers (d to j), trained on the old
  development set and the six other writers, scored on that writer's queries.

Both against the unadapted ranking on the same queries. `--learning-curve` runs leave servers out
with each fold trained on a quarter, a half and three quarters of the other servers (three draws
each): how the adapter's gain on unseen servers grows with the servers it was trained over.

Only the development sets are read, and with `--with-training-servers` the training servers'
requests (`tests/search_eval/train/`), added to every fold's training, each over the training
servers' own catalog: that set's tools and the tuning servers' are never in one softmax, since a
request labelled against one catalog says nothing of the other's tools. Measured (docs/search-experiments.md,
eighth pass): no gain, so the shipped adapter does not use them.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from gateway.catalog._search import WEAK_FUSED_SCORE
from gateway.catalog.evaluation import SearchCase
from tests.search_eval.blind_dev.dev_set import blind_dev_queries
from tests.search_eval.train_adapter import (
    SEMANTIC,
    SETTINGS,
    Settings,
    TrainingSet,
    capture_run,
    train,
    training_cases,
    training_servers_set,
)

FOLDS = 5
WEAK = WEAK_FUSED_SCORE  # the no-tool threshold on the fused score


def figures(run: dict[str, object], score: np.ndarray, rows: list[int]) -> np.ndarray:
    """Top-1/3/5 hits over the answerable rows, no-tool rows reported weak, answerable reported weak."""
    cases: list[SearchCase] = run["cases"]  # type: ignore[assignment]
    first: list[set[int]] = run["first"]  # type: ignore[assignment]
    full_cover: list[set[int]] = run["full_cover"]  # type: ignore[assignment]
    elsewhere: list[bool] = run["elsewhere"]  # type: ignore[assignment]
    accept: list[set[int]] = run["accept"]  # type: ignore[assignment]
    hits, answerable, weak_none, nones, weak_answerable = np.zeros(3), 0, 0, 0, 0
    for row in rows:
        order = sorted(np.argsort(-score[row], kind="stable")[:10], key=lambda i: i not in first[row])
        weak = order[0] not in full_cover[row] and (elsewhere[row] or score[row, order[0]] < WEAK)
        if not cases[row].accept:
            nones, weak_none = nones + 1, weak_none + weak
            continue
        answerable, weak_answerable = answerable + 1, weak_answerable + weak
        rank = next((k + 1 for k, i in enumerate(order[:5]) if i in accept[row]), 99)
        hits += [rank <= 1, rank <= 3, rank <= 5]
    return np.array([*hits, answerable, weak_none, nones, weak_answerable])


def summary(total: np.ndarray) -> str:
    top = 100 * total[:3] / total[3]
    return (
        f"{top[0]:5.1f} {top[1]:5.1f} {top[2]:5.1f}  no-tool weak {100 * total[4] / max(total[5], 1):5.1f}"
        f"  answerable weak {100 * total[6] / total[3]:5.1f}"
    )


def adapted(run: dict[str, np.ndarray], weights: np.ndarray) -> np.ndarray:
    queries = run["query_vectors"]
    moved = queries + queries @ weights.astype(np.float64).T
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    return run["fused"] + SEMANTIC * (moved @ run["tools"].T - run["similarity"])


def subset(data: TrainingSet, run: dict[str, object], rows: list[int], keep: np.ndarray) -> TrainingSet:
    """The training set of `rows` (answerable ones), its softmax over the `keep` tools only."""
    accept: list[set[int]] = run["accept"]  # type: ignore[assignment]
    rows = [row for row in rows if accept[row]]
    accepted = np.zeros((len(rows), len(keep)), dtype=bool)
    for k, row in enumerate(rows):
        accepted[k, sorted(accept[row])] = True
    rest = np.asarray(run["fused"])[rows] - SEMANTIC * np.asarray(run["similarity"])[rows]
    rest = np.where(keep, rest, -1e9)  # a tool of a held-out server is not in the softmax at all
    return dataclasses.replace(
        data, queries=np.asarray(run["query_vectors"])[rows], rest=rest, accepted=accepted
    )


def leave_servers_out(
    run: dict[str, Any],
    data: TrainingSet,
    settings: Settings,
    extra: Sequence[TrainingSet] = (),
    share: float = 1.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Unadapted and adapted figures summed over the folds of servers (module docstring); with a
    `share` under 1, each fold trains on that share of the other servers only, drawn by `seed`."""
    cases: list[SearchCase] = run["cases"]
    servers = np.asarray(run["servers"])
    accept: list[set[int]] = run["accept"]
    shuffled = np.random.default_rng(0).permutation(sorted(set(servers.tolist())))
    base, new = np.zeros(7), np.zeros(7)
    nones = [row for row, case in enumerate(cases) if not case.accept]
    for fold in range(FOLDS):
        held = set(shuffled[fold::FOLDS].tolist())
        tested = [r for r, c in enumerate(cases) if c.accept and servers[min(accept[r])] in held]
        others = np.random.default_rng(seed + fold).permutation(sorted(set(servers.tolist()) - held))
        kept = set(others[: max(1, round(share * len(others)))].tolist())
        trained = [r for r, c in enumerate(cases) if c.accept and {servers[t] for t in accept[r]} <= kept]
        weights = train([subset(data, run, trained, np.isin(servers, list(kept))), *extra], settings)
        base += figures(run, np.asarray(run["fused"]), tested + nones)
        new += figures(run, adapted(run, weights), tested + nones)
    return base, new


def case_writers(cases: list[SearchCase]) -> list[str]:
    """Each case's blind_dev writer ("" for the development queries, which come first)."""
    blind = [query.writer for query in blind_dev_queries()]
    return [""] * (len(cases) - len(blind)) + blind


def leave_one_writer_out(
    run: dict[str, Any], data: TrainingSet, settings: Settings, extra: Sequence[TrainingSet] = ()
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per blind_dev writer: unadapted and adapted figures on their queries, trained on all the others'."""
    cases: list[SearchCase] = run["cases"]
    writers = case_writers(cases)
    everything = np.ones(len(run["servers"]), dtype=bool)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for writer in sorted(set(writers) - {""}):
        tested = [row for row in range(len(cases)) if writers[row] == writer]
        trained = [row for row in range(len(cases)) if writers[row] != writer]
        weights = train([subset(data, run, trained, everything), *extra], settings)
        out[writer] = (
            figures(run, np.asarray(run["fused"]), tested),
            figures(run, adapted(run, weights), tested),
        )
    return out


def report(
    run: dict[str, Any], data: TrainingSet, settings: Settings, extra: Sequence[TrainingSet] = ()
) -> None:
    """Print both cross-validations for `settings`, the leave-one-writer-out one per writer too."""
    print(settings, f"training servers' queries: {sum(len(part.queries) for part in extra)}")
    base, new = leave_servers_out(run, data, settings, extra)
    print(f"leave servers out, unadapted: {summary(base)}")
    print(f"leave servers out, adapted:   {summary(new)}")
    per_writer = leave_one_writer_out(run, data, settings, extra)
    for writer, (before, after) in per_writer.items():
        print(f"  writer {writer}: unadapted {summary(before)}")
        print(f"  writer {writer}: adapted   {summary(after)}")
    print(
        f"leave one writer out, unadapted: {summary(sum((b for b, _ in per_writer.values()), np.zeros(7)))}"
    )
    print(
        f"leave one writer out, adapted:   {summary(sum((a for _, a in per_writer.values()), np.zeros(7)))}"
    )


def learning_curve(run: dict[str, Any], data: TrainingSet, settings: Settings) -> None:
    """Leave servers out, each fold trained on a share of the other servers: does more help?"""
    for share in (0.25, 0.5, 0.75):
        for seed in range(3):
            _, new = leave_servers_out(run, data, settings, share=share, seed=100 * seed)
            print(f"servers' share {share}, draw {seed}: adapted {summary(new)}")
    base, new = leave_servers_out(run, data, settings)
    print(f"servers' share 1.0: unadapted {summary(base)}; adapted {summary(new)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    for field in dataclasses.fields(Settings):
        flag = "--" + field.name.replace("_", "-")
        parser.add_argument(
            flag, type=type(getattr(SETTINGS, field.name)), default=getattr(SETTINGS, field.name)
        )
    parser.add_argument(
        "--with-training-servers",
        action="store_true",
        help="also train on tests/search_eval/train/'s requests, each over the training servers' catalog",
    )
    parser.add_argument(
        "--learning-curve", action="store_true", help="leave servers out with a share of the servers"
    )
    args = parser.parse_args()
    settings = Settings(**{field.name: getattr(args, field.name) for field in dataclasses.fields(Settings)})
    run, data = capture_run(training_cases())
    if args.learning_curve:
        learning_curve(run, data, settings)
        return
    extra = [training_servers_set()] if args.with_training_servers else []
    report(run, data, settings, extra)


if __name__ == "__main__":
    main()
