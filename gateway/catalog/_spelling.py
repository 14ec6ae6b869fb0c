"""Typo tolerance: the catalog's terms within one or two edits of a term it does not know.

A symmetric-delete index (every term and its one-letter deletions) finds candidates in a few dict
lookups instead of comparing against every term; each candidate is then checked with the
optimal-string-alignment distance, which counts a swap of neighbours ("teh") as one edit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

__all__ = ["MAX_CORRECTED_CHARS", "Speller", "edit_distance"]

_MIN_CHARS = 4  # shorter words are too often another real word one edit away ("log", "lag")
_TWO_EDITS_FROM = 8  # words this long may carry two typos and still mean one thing
MAX_CORRECTED_CHARS = 32
"""Longer words are neither corrected nor corrected to: a word's deletions cost the square of its
length, and no tool's vocabulary has a word that long to be one typo away from."""


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, neighbour swaps."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


class Speller:
    """Corrections for unknown words, drawn from a fixed vocabulary."""

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self._known = {word for word in vocabulary if _MIN_CHARS - 1 <= len(word) <= MAX_CORRECTED_CHARS}
        self._by_deletion: defaultdict[str, set[str]] = defaultdict(set)
        for word in self._known:
            self._by_deletion[word].add(word)
            for deleted in _deletions(word):
                self._by_deletion[deleted].add(word)

    def corrections(self, word: str) -> list[str]:
        """Known words closest to `word` (one edit, or two for long words), closest first; none for a
        word past MAX_CORRECTED_CHARS, so that a correction's cost stays bounded whatever is asked."""
        if not _MIN_CHARS <= len(word) <= MAX_CORRECTED_CHARS or word in self._known:
            return []
        candidates = set(self._by_deletion.get(word, ()))
        for deleted in _deletions(word):
            candidates |= self._by_deletion.get(deleted, set())
        allowed = 2 if len(word) >= _TWO_EDITS_FROM else 1
        scored = sorted((edit_distance(word, c), c) for c in candidates)
        return [c for distance, c in scored if distance <= allowed and distance == scored[0][0]]
