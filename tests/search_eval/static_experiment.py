"""Issue 30/31's static-model experiment: MiniLM distilled into one vector per token, against MiniLM.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.static_experiment [--holdout] [--raw FILE]

The recipe (model2vec's, written here): MiniLM (the int8 model in `gateway/catalog/model`) embeds
each WordPiece token of its vocabulary alone (`[CLS] token [SEP]`, mean-pooled and unit length as
it pools a sentence), which gives a 30,522 x 384 matrix (`--raw` caches it: a minute of CPU); it
is centred, projected on its first principal axes, each token's row scaled by a weight of its rank
in the vocabulary, and stored as float16. A text's vector is then the mean of its tokens' rows,
scaled to unit length: numpy and tokenizers only, no onnxruntime. Each variant is scored with the
same search code, in the same run, as MiniLM and lexical search; p50 is the thread's CPU time.
Not kept (docs/search-experiments.md has the figures): it scores no better than lexical search alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

from gateway.catalog import Catalog
from gateway.catalog._search import search, tool_text
from gateway.catalog._semantic import MODEL_DIR, MODEL_FILES, Embedder, SemanticSearch, load_minilm
from gateway.catalog.evaluation import SearchCase, evaluate_search, load_tool_snapshots
from tests.search_eval.eval_set import CATALOG_DIRS, HOLDOUT_QUERIES, eval_cases

VARIANTS = ((384, "log-rank"), (256, "log-rank"), (256, "none"), (128, "log-rank"))


def token_vectors(model_dir: Path = MODEL_DIR) -> np.ndarray:
    """MiniLM's vector of each token of its vocabulary alone, one run per token (int8 activations
    are scaled over the whole input, so a batch would make a token's vector depend on the others)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    model, tokenizer = (str(model_dir / name) for name in MODEL_FILES)
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    vocabulary = json.loads(Path(tokenizer).read_text())["model"]["vocab"]
    cls, sep = vocabulary["[CLS]"], vocabulary["[SEP]"]
    rows = []
    for token in range(len(vocabulary)):
        ids = np.array([[cls, token, sep]], dtype=np.int64)
        rows.append(
            np.asarray(session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0])[0]
        )
    return np.stack(rows).astype(np.float32)


def distil(matrix: np.ndarray, dimensions: int, weighting: str) -> np.ndarray:
    """The static rows: centred, on the first `dimensions` principal axes, times log(1 + token id)
    for `log-rank` (WordPiece ids roughly follow how rare a token is), as float16."""
    centred = matrix - matrix.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ axes[:dimensions].T
    if weighting == "log-rank":
        reduced *= np.log1p(np.arange(len(matrix), dtype=np.float32))[:, None]
    return reduced.astype(np.float16)


class StaticEmbedder:
    """The `Embedder` protocol over a table of token rows: a text is the unit mean of its tokens'."""

    def __init__(self, rows: np.ndarray, tokenizer: Path = MODEL_DIR / MODEL_FILES[1]) -> None:
        self._rows = rows
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self._rows.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if encoding.ids:
                vectors[row] = self._rows[encoding.ids].astype(np.float32).mean(axis=0)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)

    def similarities(self, query: str, rows: np.ndarray) -> Sequence[float]:
        return (rows @ self.encode([query])[0]).tolist()


class Rescaled:
    """A model whose cosines are mapped onto another's scale (each query's best and spread, averaged
    over the development queries), so that the fusion's weights and no-tool threshold, set on
    MiniLM's scale, read it alike."""

    def __init__(self, model: Embedder, scale: tuple[float, float], onto: tuple[float, float]) -> None:
        self._model, self._scale, self._onto = model, scale, onto

    def encode(self, texts: Sequence[str]) -> Any:
        return self._model.encode(texts)

    def similarities(self, query: str, rows: Any) -> Sequence[float]:
        (best, spread), (onto_best, onto_spread) = self._scale, self._onto
        cosines = np.asarray(self._model.similarities(query, rows))
        return ((cosines - best) * (onto_spread / spread) + onto_best).tolist()


class Blend:
    """MiniLM's cosine and the static model's, weighed: the static model as a third ranker."""

    def __init__(self, minilm: Embedder, static: Embedder, share: float) -> None:
        self._minilm, self._static, self._share = minilm, static, share

    def encode(self, texts: Sequence[str]) -> Any:
        return (self._minilm.encode(texts), self._static.encode(texts))

    def similarities(self, query: str, rows: Any) -> Sequence[float]:
        minilm = np.asarray(self._minilm.similarities(query, rows[0]))
        static = np.asarray(self._static.similarities(query, rows[1]))
        return ((1 - self._share) * minilm + self._share * static).tolist()


def _texts(catalog: Catalog) -> list[str]:
    purposes = {status.identifier: status.instructions for status in catalog.servers}
    return [tool_text(entry, purposes.get(entry.server_id)) for entry in catalog.entries]


def by_meaning_alone(
    model: Embedder, catalog: Catalog, cases: list[SearchCase]
) -> tuple[list[float], float, float]:
    """Top-1/3/5 ranking every tool by the model's cosine alone, and the scale of its cosines (each
    query's best and spread, averaged)."""
    rows, names = model.encode(_texts(catalog)), [entry.qualified for entry in catalog.entries]
    hits, best, spread = [0, 0, 0], [], []
    answerable = [case for case in cases if case.accept]
    for case in answerable:
        cosines = np.asarray(model.similarities(case.query, rows))
        order = np.argsort(-cosines)
        best.append(float(cosines[order[0]]))
        spread.append(float(cosines.std()))
        rank = next((r for r, i in enumerate(order[:5], start=1) if names[i] in case.accept), 99)
        hits = [h + (rank <= k) for h, k in zip(hits, (1, 3, 5), strict=True)]
    return [h / len(answerable) for h in hits], statistics.mean(best), statistics.mean(spread)


def _cpu_p50(catalog: Catalog, cases: list[SearchCase]) -> float:
    timings = []
    for case in cases:
        best = float("inf")
        for _ in range(3):
            started = time.thread_time()
            search(catalog, case.query, limit=5)
            best = min(best, time.thread_time() - started)
        timings.append(best * 1000)
    return statistics.median(timings)


def print_scores(name: str, catalog: Catalog, sets: dict[str, list[SearchCase]], width: int = 20) -> None:
    """One line per query set: top-1/3/5, MRR@5, no-tool queries reported weak, CPU p50."""
    for label, cases in sets.items():
        r = evaluate_search(catalog, cases, repeats=1)
        p50 = _cpu_p50(catalog, cases)
        print(
            f"{name:{width}} {label:8} top1 {r.top1:.1%} top3 {r.top3:.1%} top5 {r.top5:.1%} "
            f"mrr {r.mrr:.3f} no-tool {r.rejected or 0:.1%} cpu-p50 {p50:.2f} ms",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--raw", type=Path, help="where the token vectors are cached (built if absent)")
    parser.add_argument("--holdout", action="store_true", help="also score the held-out set")
    args = parser.parse_args()
    if args.raw is not None and args.raw.is_file():
        raw = np.load(args.raw)
    else:
        started = time.process_time()
        raw = token_vectors()
        print(f"token vectors: {raw.shape}, {time.process_time() - started:.0f} s of CPU")
        if args.raw is not None:
            np.save(args.raw, raw)
    tools = load_tool_snapshots(list(CATALOG_DIRS))
    sets = {"dev": eval_cases()} | ({"holdout": eval_cases(HOLDOUT_QUERIES)} if args.holdout else {})
    models: dict[str, Embedder | None] = {"lexical": None, "minilm": load_minilm()}
    for dimensions, weighting in VARIANTS:
        models[f"static {dimensions} {weighting}"] = StaticEmbedder(distil(raw, dimensions, weighting))
    scales: dict[str, tuple[float, float]] = {}
    for name, model in list(models.items()):
        if model is not None:
            (top1, top3, top5), best, spread = by_meaning_alone(model, Catalog(tools), sets["dev"])
            scales[name] = (best, spread)
            print(f"{name:20} dev, by meaning alone: top1 {top1:.1%} top3 {top3:.1%} top5 {top5:.1%}")
    minilm, static = models["minilm"], models["static 256 log-rank"]
    assert minilm is not None
    assert static is not None
    models["static 256 rescaled"] = Rescaled(static, scales["static 256 log-rank"], scales["minilm"])
    for share in (0.2, 0.4):
        models[f"minilm+static {share}"] = Blend(minilm, static, share)
    for name, model in models.items():
        semantic = None if model is None else SemanticSearch(load=lambda m=model: m)
        print_scores(name, Catalog(tools, semantic=semantic), sets)


if __name__ == "__main__":
    main()
