"""Search by meaning: the lexical ranking fused with meaning over every tool.

Lexical search misses what shares no word with the tool ("tell the team in #general the deploy is
done" -> `slack_post_message`). Where its runtime is installed (every install brings it), a
sentence embedding model (MiniLM, shipped as int8 ONNX inside the gateway's wheel) embeds each tool
once and each query as it comes; a tool's final score blends its lexical score (as a share of the
best one) with its cosine similarity to the query, for every tool of the catalog. docs/search.md has
the measurements behind the weights.

This module is plain Python: the fusion, the switch and the model's lifecycle. The model itself is
`_minilm`, imported only when it is loaded, off the caller's thread.
"""

from __future__ import annotations

import heapq
import importlib
import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gateway.errors import ConfigError

__all__ = [
    "ADAPTER_FILE",
    "EXTRA_MODULES",
    "FUSION",
    "MODEL_DIR",
    "MODEL_FILES",
    "Embedder",
    "Fusion",
    "SemanticMode",
    "SemanticSearch",
    "fuse",
    "load_query_adapter",
    "semantic_installed",
    "semantic_search",
]

log = logging.getLogger("gateway.search")

SemanticMode = Literal["auto", "on", "off"]

EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers")
"""What runs the model: dependencies of every install, missing only where ONNX Runtime has no wheel
(or the package was installed without its dependencies)."""

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILES = ("all-minilm-l6-v2-int8.onnx", "tokenizer.json")
"""The model, built by `_minilm_build` into MODEL_DIR: inside the wheel, or by `make setup` in a clone."""
ADAPTER_FILE = Path(__file__).resolve().parent / "query_adapter.npy"
"""The query adapter's weights (`_adapter`), trained by tests/search_eval/train_adapter.py."""

_INSTALL_HINT = "pip install 'onnxruntime>=1.32' 'tokenizers>=0.23' 'numpy>=2'"
_BUILD_HINT = (
    "in a clone, `make setup` builds it (python gateway/catalog/_minilm_build.py gateway/catalog/model)"
)
_said_lexical = threading.Event()  # the lexical fallback is logged once per process


class Embedder(Protocol):
    """A sentence embedding model: tool texts as rows of unit vectors, and a query's cosine to each."""

    def encode(self, texts: Sequence[str]) -> Any:
        """One unit-length vector per text, as the rows of a matrix of the model's own type."""
        ...

    def similarities(self, query: str, rows: Any) -> Sequence[float]:
        """The cosine similarity of `query` to each row `encode` made, in row order."""
        ...


class Adapter(Protocol):
    """A learned map of the query's embedding, applied through the tool rows (`_adapter.QueryAdapter`)."""

    def rows(self, tools: Any) -> Any:
        """The rows to compare the unadapted query with, made from the tools' rows."""
        ...

    def similarities(self, products: Sequence[float]) -> Sequence[float]:
        """The adapted query's cosine to each tool, from the query's similarities to `rows`."""
        ...


@dataclass(frozen=True)
class Fusion:
    """How the lexical ranking and the query's similarity to every tool make one ranking; chosen on
    the development queries (docs/search.md)."""

    lexical: float = 0.2  # the lexical evidence's share; meaning has the rest
    method: Literal["scores", "ranks"] = "scores"  # blend the scores, or reciprocal ranks (RRF)
    rank_constant: int = 60  # RRF's k: how slowly a rank's weight falls off


FUSION = Fusion()


def _reciprocal_ranks(order: Sequence[int], k: int) -> dict[int, float]:
    return {i: 1.0 / (k + rank) for rank, i in enumerate(order, start=1)}


def fuse(
    lexical: Sequence[tuple[int, float]],
    similarities: Sequence[float],
    allowed: Callable[[int], bool] | None = None,
    weights: Fusion = FUSION,
    limit: int | None = None,
) -> list[tuple[int, float]]:
    """The best `limit` allowed tools (all without a limit) as (tool index, fused score), best first.

    `lexical` is the lexical ranking, best first, as (tool index, score); `similarities` has one
    cosine per tool of the catalog; `allowed` keeps the tools a server filter leaves. Meaning is
    weighed over the whole catalog, so a tool sharing no word with the query can still come first.
    """
    tools = (
        range(len(similarities)) if allowed is None else [i for i in range(len(similarities)) if allowed(i)]
    )
    if weights.method == "ranks":
        by_meaning = sorted(tools, key=lambda i: (-similarities[i], i))
        words = _reciprocal_ranks(
            [i for i, _ in lexical if allowed is None or allowed(i)], weights.rank_constant
        )
        meaning = _reciprocal_ranks(by_meaning, weights.rank_constant)
        scored = {i: weights.lexical * words.get(i, 0.0) + (1 - weights.lexical) * meaning[i] for i in tools}
    else:
        top = max((score for _, score in lexical), default=0.0)
        share = {i: (score / top if top > 0 else 0.0) for i, score in lexical}
        scored = {
            i: weights.lexical * share.get(i, 0.0) + (1 - weights.lexical) * similarities[i] for i in tools
        }

    def order(item: tuple[int, float]) -> tuple[float, int]:
        return (-item[1], item[0])  # ties to the tool listed first

    if limit is None:
        return sorted(scored.items(), key=order)
    return heapq.nsmallest(limit, scored.items(), key=order)


def _missing_modules() -> list[str]:
    # Found, not imported: importing onnxruntime takes a fraction of a second a gateway may not need.
    return [module for module in EXTRA_MODULES if importlib.util.find_spec(module) is None]


def _missing_model() -> list[str]:
    return [name for name in MODEL_FILES if not (MODEL_DIR / name).is_file()]


def _unavailable() -> str | None:
    """Why the re-rank cannot run here (what is missing, and how to get it), or None if it can."""
    if missing := _missing_modules():
        return f"the search model's runtime is not installed (missing: {', '.join(missing)}): {_INSTALL_HINT}"
    if missing := _missing_model():
        return f"the search model is not built (missing: {', '.join(missing)} in {MODEL_DIR}): {_BUILD_HINT}"
    return None


def semantic_installed() -> bool:
    """Whether the search model and what runs it are installed."""
    return _unavailable() is None


def load_query_adapter(path: Path = ADAPTER_FILE) -> Adapter | None:
    """The query adapter shipped beside the model; None (logged) if its file is missing."""
    if not path.is_file():
        log.warning("the search query adapter is missing (%s): queries are embedded as they are", path)
        return None
    module = importlib.import_module("gateway.catalog._adapter")  # numpy: only where the model runs
    adapter: Adapter = module.QueryAdapter.load(path)
    return adapter


def load_minilm(model_dir: Path = MODEL_DIR) -> Embedder:
    """The MiniLM model in `model_dir` (where the wheel ships it unless given), ready to embed."""
    # Imported here, not at the top: the module imports onnxruntime, which only a gateway that
    # searches semantically should pay for, and it cannot be imported without its runtime at all.
    module = importlib.import_module("gateway.catalog._minilm")
    embedder: Embedder = module.MiniLM(model_dir)
    return embedder


class SemanticSearch:
    """The embedding model of one gateway: loaded once, on a thread of its own or the caller's."""

    def __init__(
        self,
        load: Callable[[], Embedder] = load_minilm,
        weights: Fusion = FUSION,
        load_adapter: Callable[[], Adapter | None] | None = None,
    ) -> None:
        """`load` makes the model (a test passes a small fake), `load_adapter` the query adapter
        trained for it (MiniLM's, shipped, when `load` is left as it is; None for another model:
        queries are embedded as they are); they run once, whoever asks first."""
        self._load = load
        shipped = load_query_adapter if load is load_minilm else None
        self._load_adapter = load_adapter if load_adapter is not None else shipped
        self.weights = weights
        self._embedder: Embedder | None = None
        self._adapter: Adapter | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self._done = threading.Event()

    @property
    def embedder(self) -> Embedder | None:
        """The model once it is loaded; None while it loads or if loading failed."""
        return self._embedder

    @property
    def adapter(self) -> Adapter | None:
        """The query adapter, once the model is loaded; None without one."""
        return self._adapter

    @property
    def error(self) -> BaseException | None:
        """Why the model could not be loaded, if it could not."""
        return self._error

    def _claim(self) -> bool:
        with self._lock:
            first, self._started = not self._started, True
            return first

    def _run(self) -> None:
        try:
            if self._load_adapter is not None:  # before the model: a search that sees the model sees it too
                self._adapter = self._load_adapter()
            self._embedder = self._load()
            log.info("semantic search is ready")
        except Exception as exc:  # a broken install: search stays lexical, and says why once
            self._error = exc
            if self._closed:  # the process is shutting down under the import: nothing is wrong
                log.debug("the semantic search model stopped loading as the gateway closed")
            else:
                log.exception("the semantic search model failed to load; search stays lexical")
        finally:
            self._done.set()

    def load(self, timeout: float | None = None) -> Embedder | None:
        """Load the model now, or wait up to `timeout` seconds for the load under way; None if it
        failed (logged once) or is still loading."""
        if self._claim():
            self._run()
        self._done.wait(timeout)
        return self._embedder

    def close(self) -> None:
        """Its gateway is leaving: a load still under way may fail as the interpreter shuts down."""
        self._closed = True

    def start(self) -> None:
        """Load the model on a thread of its own unless that has begun; searches stay lexical meanwhile."""
        if self._claim():
            threading.Thread(target=self._run, name="semantic-search-load", daemon=True).start()


def semantic_search(mode: SemanticMode) -> SemanticSearch | None:
    """The re-rank the config's `search.semantic` asks for: None when it is off, or `auto` and the
    extra (or its model) is not installed, which is logged once; ConfigError when it is `on`."""
    if mode == "off":
        return None
    reason = _unavailable()
    if reason is None:
        return SemanticSearch()
    if mode == "on":
        raise ConfigError(f"search.semantic is 'on' but {reason}; or set search.semantic to 'auto'")
    if not _said_lexical.is_set():
        _said_lexical.set()
        log.warning("search is lexical: %s", reason, extra={"semantic": mode})
    return None
