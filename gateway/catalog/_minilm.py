"""The search's embedding model: all-MiniLM-L6-v2 as int8 ONNX, run by ONNX Runtime.

Importing this module fails without its runtime (onnxruntime, tokenizers, numpy): `_semantic` is the
one place that imports it, when a gateway loads its model. The model file ships built inside the
wheel (`setup.py` runs `_minilm_build`; a clone's `make setup` writes the same files into
`MODEL_DIR`), so run time needs only onnxruntime, tokenizers and numpy, and nothing is built or
downloaded.
"""

# pyright: basic, reportMissingImports=false
# onnxruntime and tokenizers come only with the `semantic` extra, which the lint environment does not
# install; their types cannot be checked there, so this one module is checked in basic mode.

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

from gateway.catalog._semantic import MODEL_DIR, MODEL_FILES

__all__ = ["MiniLM"]

_DIMENSIONS = 384  # all-MiniLM-L6-v2's sentence embeddings
_MAX_TOKENS = 256  # what the model was trained on (its sentence_bert_config.json)
_MAX_CACHED = 20_000  # tool texts kept embedded across catalog versions (1.5 KiB each)


class MiniLM:
    """Unit-length sentence embeddings on the CPU, each tool text embedded once per process."""

    def __init__(self, model_dir: Path = MODEL_DIR) -> None:
        options = onnxruntime.SessionOptions()
        # One thread: a query is a dozen tokens, and a second thread only makes the two wait for each other.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        model, tokenizer = (str(model_dir / name) for name in MODEL_FILES)
        self._session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(tokenizer)
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
            # The graph pools the tokens' states (their mean) and scales the result to unit length.
            [embedding] = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
            rows[row] = np.asarray(embedding)[0]
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
