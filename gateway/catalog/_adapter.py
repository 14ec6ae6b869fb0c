"""The query adapter: a linear map, learned from labelled queries, that moves a query's embedding
toward the tools people mean by it: `normalize(q + W q)` in place of `q`.

MiniLM was trained on general sentence pairs, not on requests and the tools that serve them; `W` is
trained on the development queries (tests/search_eval/train_adapter.py; docs/search-experiments.md,
fifth pass, has how and the figures). Importing this module needs numpy: `_semantic` imports it when
it loads the model.
"""

# pyright: basic, reportMissingImports=false
# numpy comes only with the `semantic` extra, which the lint environment does not install.

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["QueryAdapter"]


class QueryAdapter:
    """`normalize(q + W q)`, applied through the tool rows so the embedder's own call is unchanged."""

    def __init__(self, weights: np.ndarray) -> None:
        self._weights = weights  # kept as shipped (float16): (I + W) is made for each catalog's rows
        self._dimensions = weights.shape[0]

    @classmethod
    def load(cls, path: Path) -> QueryAdapter:
        """The adapter whose `W` is saved in `path` (a square `.npy` matrix)."""
        weights = np.load(path, allow_pickle=False)
        if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
            raise ValueError(f"{path.name}: the query adapter must be a square matrix, not {weights.shape}")
        return cls(weights)

    def rows(self, tools: Any) -> np.ndarray:
        """Tool rows to compare an unadapted query with: each tool as (I + W)^T t, then (I + W) itself,
        whose products with the query give the adapted query's length."""
        tools = np.asarray(tools, dtype=np.float32)
        if tools.ndim != 2 or tools.shape[1] != self._dimensions:
            raise ValueError(
                f"the query adapter is {self._dimensions}-dimensional; the tools are {tools.shape[-1]}"
            )
        # Row i of (I + W) dotted with the query is the i-th coordinate of the adapted query.
        adapted = np.eye(self._dimensions, dtype=np.float32) + self._weights.astype(np.float32)
        return np.vstack([tools @ adapted, adapted])

    def similarities(self, products: Sequence[float]) -> list[float]:
        """The adapted query's cosine to each tool, from the query's products with `rows`."""
        values = np.asarray(products, dtype=np.float64)
        tools, query = values[: -self._dimensions], values[-self._dimensions :]
        return (tools / max(float(np.linalg.norm(query)), 1e-12)).tolist()
