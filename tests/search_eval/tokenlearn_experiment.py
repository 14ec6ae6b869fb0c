"""Issue 30/31, second static-model pass: the tokenlearn students scored with the shipped search code.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_experiment [--holdout] \
        [--student NAME=FILE.npz[@TEACHER] ...] [--float32 DIR] [--minilm NAME=DIR ...]
    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.tokenlearn_experiment memory FILE.npz|DIR \
        [--minilm | --tool-rows FILE.npz [--adapter]]

Each student (`tokenlearn_train.py` writes it) is used two ways, in the same run as lexical search,
the shipped MiniLM (int8, with and without its query adapter), the old static recipe
(`static_experiment`) and, if given, MiniLM built in float32 (`tokenlearn_data float32`):

- symmetric: tools and queries both embedded by the student;
- asymmetric: tools embedded by MiniLM (the gateway would do it once per catalog, in a short-lived
  subprocess), queries by the student (numpy and tokenizers only); also with MiniLM's query adapter.

`memory` measures, in a fresh interpreter, the RSS (/proc/self/status VmRSS) the student path adds
over a gateway with its catalog built: numpy and tokenizers imported, the table memory-mapped, the
catalog's tools embedded, 100 queries searched (`--minilm`: the same with the shipped model).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MODEL = Path(__file__).resolve().parents[2] / "gateway" / "catalog" / "model"
_MAX = 254  # content tokens: MiniLM truncates at 256 with [CLS] and [SEP]


def unpack(npz: Path, target: Path) -> Path:
    """A student's arrays as .npy files in `target` (so the table can be memory-mapped)."""
    import numpy as np

    target.mkdir(parents=True, exist_ok=True)
    with np.load(npz) as saved:
        for name in saved.files:
            np.save(target / f"{name}.npy", saved[name])
    return target


class Student:
    """A tokenlearn student: unit(sum E[t] / sum w[t] @ P + b) over a text's WordPiece tokens."""

    def __init__(self, directory: Path, mmap: bool = True) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        mode = "r" if mmap else None
        self._table = np.load(directory / "table.npy", mmap_mode=mode)
        self._weights = np.load(directory / "weights.npy", mmap_mode=mode)
        self._project = np.load(directory / "project.npy")
        self._bias = np.load(directory / "bias.npy")
        self._tokenizer = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        sums = np.zeros((len(texts), self._table.shape[1]), dtype=np.float32)
        totals = np.ones(len(texts), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            ids = encoding.ids[:_MAX]
            if ids:
                sums[row] = self._table[ids].astype(np.float32).sum(axis=0)
                totals[row] = float(self._weights[ids].sum())
        out = (sums / totals[:, None]) @ self._project + self._bias
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.vectors(texts)

    def similarities(self, query: str, rows: np.ndarray) -> Sequence[float]:
        return (rows @ self.vectors([query])[0]).tolist()


class Asymmetric:
    """Tools embedded by MiniLM, queries by the student."""

    def __init__(self, tools: Any, queries: Student) -> None:
        self._tools, self._queries = tools, queries

    def encode(self, texts: Sequence[str]) -> Any:
        return self._tools.encode(texts)

    def similarities(self, query: str, rows: np.ndarray) -> Sequence[float]:
        return (rows @ self._queries.vectors([query])[0]).tolist()


def score(args: argparse.Namespace) -> None:
    import numpy as np

    from gateway.catalog import Catalog
    from gateway.catalog._minilm import MiniLM
    from gateway.catalog._semantic import Embedder, SemanticSearch, load_query_adapter
    from gateway.catalog.evaluation import load_tool_snapshots
    from tests.search_eval.eval_set import CATALOG_DIRS, HOLDOUT_QUERIES, eval_cases
    from tests.search_eval.static_experiment import StaticEmbedder, by_meaning_alone, distil, print_scores

    tools = load_tool_snapshots(list(CATALOG_DIRS))
    sets = {"dev": eval_cases()} | ({"holdout": eval_cases(HOLDOUT_QUERIES)} if args.holdout else {})
    int8 = MiniLM()
    models: dict[str, tuple[Embedder | None, bool]] = {  # (model, with MiniLM's query adapter)
        "lexical": (None, False),
        "minilm int8 + adapter (shipped)": (int8, True),
        "minilm int8": (int8, False),
    }
    float32 = MiniLM(args.float32) if args.float32 else None
    if float32 is not None:
        models["minilm f32 + adapter"] = (float32, True)
        models["minilm f32"] = (float32, False)
    others = {}
    for spec in args.minilm:  # other builds (the base model), queries as they are
        name, _, path = spec.partition("=")
        others[name] = MiniLM(Path(path))
        models[name] = (others[name], False)
    if args.raw.is_file():
        models["old static 256 log-rank"] = (
            StaticEmbedder(distil(np.load(args.raw), 256, "log-rank")),
            False,
        )
    for spec in args.student:  # NAME=FILE.npz, or NAME=FILE.npz@TEACHER for a student of another build
        name, _, path = spec.partition("=")
        path, _, teacher = path.partition("@")
        student = Student(unpack(Path(path), Path("/tmp/tokenlearn/unpacked") / name), mmap=False)
        models[f"{name} sym"] = (student, False)
        if teacher:
            models[f"{name} asym ({teacher} tools)"] = (Asymmetric(others[teacher], student), False)
            continue
        models[f"{name} asym"] = (Asymmetric(int8, student), False)
        models[f"{name} asym + adapter"] = (Asymmetric(int8, student), True)
        if float32 is not None and args.asym_f32:
            models[f"{name} asym f32 tools + adapter"] = (Asymmetric(float32, student), True)
    for name, (model, _) in models.items():
        if model is not None and args.alone:
            (top1, top3, top5), best, spread = by_meaning_alone(model, Catalog(tools), sets["dev"])
            print(
                f"{name:36} dev by meaning alone: top1 {top1:.1%} top3 {top3:.1%} top5 {top5:.1%} "
                f"best {best:.3f} spread {spread:.3f}",
                flush=True,
            )
    for name, (model, adapted) in models.items():
        semantic = None
        if model is not None:
            semantic = SemanticSearch(
                load=lambda m=model: m, load_adapter=load_query_adapter if adapted else (lambda: None)
            )
        print_scores(name, Catalog(tools, semantic=semantic), sets, width=36)


def _rss() -> tuple[float, float]:
    """VmRSS, and of it RssFile (the mapped files' pages: the table's), in MiB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024


class Precomputed:
    """Tool rows another process embedded (`memory --tool-rows`: MiniLM's, saved as texts and rows)."""

    def __init__(self, path: Path) -> None:
        import numpy as np

        with np.load(path) as saved:
            self._rows = dict(zip(saved["texts"].tolist(), saved["rows"], strict=True))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        return np.stack([self._rows[text] for text in texts])


def save_tool_rows(target: Path) -> None:
    """MiniLM's rows for the tuning catalog's tools and for the fixed phrases search's product check
    compares unknown names with (`KINDS_OF_NAMES`), as the short-lived subprocess would make them."""
    import numpy as np

    from gateway.catalog import Catalog
    from gateway.catalog._intent import KINDS_OF_NAMES
    from gateway.catalog._minilm import MiniLM
    from gateway.catalog.evaluation import load_tool_snapshots
    from tests.search_eval.eval_set import CATALOG_DIRS
    from tests.search_eval.static_experiment import _texts

    texts = _texts(Catalog(load_tool_snapshots(list(CATALOG_DIRS))))
    texts += [phrase for kind in KINDS_OF_NAMES for phrase in kind]
    np.savez(target, texts=np.array(texts), rows=MiniLM().encode(texts))


def memory(npz: Path, minilm: bool, tool_rows: Path | None = None, adapter: bool = False) -> None:
    import gateway.sandbox  # noqa: F401  (the package, as docs/deploy.md's first row)
    from gateway.catalog import Catalog
    from gateway.catalog._search import search, warm_search
    from gateway.catalog._semantic import SemanticSearch
    from gateway.catalog.evaluation import load_tool_snapshots
    from tests.search_eval.eval_set import CATALOG_DIRS, eval_cases

    tools = load_tool_snapshots(list(CATALOG_DIRS))
    queries = [case.query for case in eval_cases()][:100]

    def load_student() -> Student | Asymmetric:
        directory = npz if npz.is_dir() else unpack(npz, Path("/tmp/tokenlearn/unpacked") / npz.stem)
        student = Student(directory, mmap=True)
        return student if tool_rows is None else Asymmetric(Precomputed(tool_rows), student)

    # The shipped model and its query adapter, or the student (symmetric, or asymmetric over tool rows
    # MiniLM embedded in another process); loaded below, not by a search.
    from gateway.catalog._semantic import load_query_adapter

    semantic = (
        SemanticSearch()
        if minilm
        else SemanticSearch(load=load_student, load_adapter=load_query_adapter if adapter else lambda: None)
    )
    catalog = Catalog(tools, semantic=semantic)
    warm_search(catalog)  # the lexical index only: the model is not loaded yet
    steps = [("gateway, catalog and its lexical index built", _rss())]
    assert "numpy" not in sys.modules, "numpy was already imported"
    import numpy  # noqa: F401

    steps.append(("import numpy", _rss()))
    import tokenizers  # noqa: F401

    steps.append(("import tokenizers", _rss()))
    semantic.load()
    label = (
        "onnxruntime imported, session, tokenizer, adapter"
        if minilm
        else "student (table memory-mapped), tokenizer"
    )
    steps.append((label, _rss()))
    warm_search(catalog)
    steps.append((f"{len(catalog)} tools embedded", _rss()))
    started = time.process_time()
    for query in queries:
        search(catalog, query, limit=5)
    steps.append(
        (
            f"{len(queries)} queries "
            f"({(time.process_time() - started) / len(queries) * 1000:.2f} ms CPU each)",
            _rss(),
        )
    )
    base = steps[0][1][0]
    for label, (rss, file) in steps:
        print(f"{rss:7.1f} MiB  +{rss - base:5.1f}  (RssFile {file:5.1f})  {label}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "memory":
        parser = argparse.ArgumentParser()
        parser.add_argument("step")
        parser.add_argument("student", type=Path)
        parser.add_argument("--minilm", action="store_true")
        parser.add_argument("--tool-rows", type=Path, help="asymmetric: MiniLM's tool rows (made if absent)")
        parser.add_argument("--adapter", action="store_true", help="asymmetric: with MiniLM's query adapter")
        args = parser.parse_args()
        if args.tool_rows is not None and not args.tool_rows.is_file():
            save_tool_rows(args.tool_rows)
            return
        memory(args.student, args.minilm, args.tool_rows, args.adapter)
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--holdout", action="store_true")
    parser.add_argument("--alone", action="store_true", help="also rank by meaning alone (dev)")
    parser.add_argument("--student", action="append", default=[], help="NAME=FILE.npz")
    parser.add_argument("--raw", type=Path, default=Path("/tmp/tokenlearn/raw_tokens.npy"))
    parser.add_argument("--float32", type=Path, help="the fine-tuned MiniLM built in float32")
    parser.add_argument("--asym-f32", action="store_true", help="also the students with float32 tools")
    parser.add_argument("--minilm", action="append", default=[], help="NAME=DIR: another MiniLM build")
    score(parser.parse_args())


if __name__ == "__main__":
    main()
