"""A fake sentence embedding model for the semantic re-rank's tests: meaning as groups of words."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence

__all__ = ["MEANINGS", "FakeEmbedder"]

# Words that mean the same to the fake model, though no word is shared across a group.
MEANINGS = (
    {"weather", "forecast", "umbrella", "rain"},
    {"invoice", "bill", "payment", "pay"},
    {"note", "notes", "jot", "remember"},
)


class FakeEmbedder:
    """Unit vectors over MEANINGS (plus one axis for no known meaning); records what it was asked."""

    def __init__(self) -> None:
        self.encoded: list[list[str]] = []
        self.queries: list[tuple[str, str]] = []  # query, thread name
        self.embedded = threading.Event()  # set once `encode` has been called

    @staticmethod
    def vector(text: str) -> list[float]:
        found = re.findall(r"[a-z]+", text.lower())
        raw = [float(sum(word in group for word in found)) for group in MEANINGS]
        raw.append(0.0 if any(raw) else 1.0)
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw]

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.encoded.append(list(texts))
        self.embedded.set()
        return [self.vector(text) for text in texts]

    def similarities(self, query: str, rows: list[list[float]]) -> list[float]:
        self.queries.append((query, threading.current_thread().name))
        q = self.vector(query)
        return [sum(a * b for a, b in zip(q, row, strict=True)) for row in rows]
