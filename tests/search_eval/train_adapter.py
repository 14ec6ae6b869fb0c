"""Train the query adapter search ships (`gateway/catalog/query_adapter.npy`) from the development sets.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.train_adapter           # write the file
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.train_adapter --check   # compare with it

The adapter maps a query's MiniLM embedding `q` to `normalize(q + W q)`. `W` is trained on the
development queries (`queries.json`) and the development set written blind (`blind_dev/`), over
the tuning catalog, never on the held-out or the blind set: a softmax over every tool of the
catalog of the score search ranks by (the lexical share and the intent's lean as they are, the
cosine through the adapter), the accepted tools as the target, temperature 0.05, plus a penalty
on `W`'s size; full-batch Adam from `W = 0` for 100 steps, so there is no seed: the same inputs
train the same weights (up to the last bits of floating-point sums, which float16 rounds away).
docs/search-experiments.md has the cross-validation that chose these settings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gateway.catalog import Catalog
from gateway.catalog._search import tool_text
from gateway.catalog._semantic import ADAPTER_FILE, FUSION, SemanticSearch, load_minilm
from gateway.catalog.evaluation import SearchCase, load_tool_snapshots
from tests.search_eval.blind_dev.dev_set import blind_dev_queries
from tests.search_eval.eval_set import CATALOG_DIRS, eval_cases
from tests.search_eval.fusion_experiment import Recording, capture, catalog_rows
from tests.search_eval.train.train_set import TRAIN_CATALOG, train_queries

SEMANTIC = 1 - FUSION.lexical  # the cosine's share of the fused score


@dataclass(frozen=True)
class Settings:
    """How the adapter is trained (chosen by leave-servers-out cross-validation: search-experiments.md)."""

    penalty: float = 0.01  # times the squared Frobenius norm of W: keeps the map near the identity
    temperature: float = 0.05
    steps: int = 100  # full-batch Adam has converged by then: more steps change no ranking
    learning_rate: float = 0.003


SETTINGS = Settings()
MAX_DIFFERENCE = 2e-3  # how far a retrained weight may be from the shipped one (float16, other CPUs)


@dataclass(frozen=True)
class TrainingSet:
    """Each answerable query's embedding, the rest of its fused score, and its accepted tools."""

    queries: np.ndarray  # n x d, unit rows
    rest: np.ndarray  # n x m: the fused score without the cosine's share
    accepted: np.ndarray  # n x m booleans
    tools: np.ndarray  # m x d, unit rows


def training_cases() -> list[SearchCase]:
    """The development queries and the development set written blind (never the held-out or blind sets)."""
    return eval_cases() + [query.case() for query in blind_dev_queries()]


def capture_run(
    cases: list[SearchCase], catalog_dirs: Sequence[Path] = CATALOG_DIRS
) -> tuple[dict[str, Any], TrainingSet]:
    """Search every case over a catalog (the tuning one unless named) with the unadapted model: what
    search scored (the fusion experiment's record, with each tool's server and row), and the
    answerable cases' data."""
    tools = load_tool_snapshots(list(catalog_dirs))
    recording = Recording(load_minilm(), sum(len(t) for t in tools.values()))
    semantic = SemanticSearch(load=lambda: recording)
    catalog = Catalog(tools, semantic=semantic)
    semantic.load()
    run = dict(vars(capture(catalog, None, recording, cases)))
    run["tools"] = np.asarray(catalog_rows(catalog, recording), dtype=np.float64)
    run["servers"] = np.array([entry.server_id for entry in catalog.entries])
    run["query_texts"] = recording.texts[-len(cases) :] if cases else []
    run["tool_texts"] = [tool_text(entry) for entry in catalog.entries]
    answerable = [row for row, case in enumerate(cases) if case.accept]
    accepted = np.zeros((len(answerable), len(catalog)), dtype=bool)
    for k, row in enumerate(answerable):
        accepted[k, sorted(run["accept"][row])] = True
    data = TrainingSet(
        queries=run["query_vectors"][answerable].astype(np.float64),
        rest=(run["fused"] - SEMANTIC * run["similarity"])[answerable],
        accepted=accepted,
        tools=run["tools"],
    )
    return run, data


def training_set(cases: list[SearchCase]) -> TrainingSet:
    """The answerable cases' training data (`capture_run`)."""
    return capture_run(cases)[1]


def training_servers_set() -> TrainingSet:
    """The training servers' queries over their own catalog (`tests/search_eval/train/`)."""
    return capture_run([query.case() for query in train_queries()], [TRAIN_CATALOG])[1]


def _gradient(data: TrainingSet, weights: np.ndarray, settings: Settings, n: int) -> np.ndarray:
    """The listwise loss's gradient to `W` over one catalog's queries, as a share of all `n`."""
    q, tools = data.queries, data.tools
    adapted = q + q @ weights.T
    length = np.linalg.norm(adapted, axis=1, keepdims=True)
    unit = adapted / length
    logits = (data.rest + SEMANTIC * unit @ tools.T) / settings.temperature
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    everything = exp / exp.sum(axis=1, keepdims=True)
    accepted = np.where(data.accepted, exp, 0.0)
    accepted /= accepted.sum(axis=1, keepdims=True)
    # The loss's gradient: to the cosines, the unit query, the adapted query, then W.
    to_cosines = (everything - accepted) * SEMANTIC / settings.temperature / n
    to_unit = to_cosines @ tools
    to_adapted = (to_unit - unit * (to_unit * unit).sum(axis=1, keepdims=True)) / length
    return to_adapted.T @ q


def train(data: TrainingSet | Sequence[TrainingSet], settings: Settings = SETTINGS) -> np.ndarray:
    """`W` by full-batch Adam on the listwise loss, each query over its own catalog (module docstring)."""
    sets = [data] if isinstance(data, TrainingSet) else list(data)
    n = sum(len(part.queries) for part in sets)
    dimensions = sets[0].queries.shape[1]
    weights = np.zeros((dimensions, dimensions))
    moment, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, settings.steps + 1):
        gradient = sum((_gradient(part, weights, settings, n) for part in sets), np.zeros_like(weights))
        gradient += 2 * settings.penalty * weights
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        weights -= (
            settings.learning_rate * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
        )
    return weights.astype(np.float16)


def main(argv: list[str]) -> int:
    """Write the adapter's weights, or with --check say whether the shipped ones are what training gives."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    parser.add_argument("--out", type=Path, default=ADAPTER_FILE, help="where to write the weights")
    args = parser.parse_args(argv)
    weights = train(training_set(training_cases()))
    if args.check:
        shipped = np.load(ADAPTER_FILE).astype(np.float64)
        difference = float(np.abs(shipped - weights.astype(np.float64)).max())
        print(f"largest difference from {ADAPTER_FILE.name}: {difference:.2e} (at most {MAX_DIFFERENCE})")
        return 0 if difference <= MAX_DIFFERENCE else 1
    np.save(args.out, weights, allow_pickle=False)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
