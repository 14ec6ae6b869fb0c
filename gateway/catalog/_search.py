"""Ranked tool search: Okapi BM25 over one weighted document per tool, built once per Catalog.

A tool's document is its name words, server name, title, description, parameter names and
parameter descriptions. Fields are weighted inside the term frequency (a name word counts three
description words), which BM25 takes as is: tf need not be an integer.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

from gateway._json import as_array, as_object, properties_of
from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._naming import split_words

__all__ = ["search", "tokenize"]

K1 = 1.2
B = 0.75
NAME, TITLE, SERVER, DESCRIPTION, PARAM_NAME, PARAM_TEXT = 3.0, 2.0, 1.5, 1.0, 1.0, 0.5
_NESTED_DEPTH = 3  # how deep parameter schemas are read for nested property names and descriptions

_STOPWORDS = frozenset(
    {
        "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
        "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "that", "the", "then",
        "this", "to", "use", "using", "via", "want", "was", "we", "what", "when", "which", "will", "with",
        "you", "your",
    }
)  # fmt: skip
# Words people search with that tool authors spell otherwise; each adds its partner to the query.
_SYNONYMS = {
    "folder": "directory",
    "dir": "directory",
    "rename": "move",
    "remove": "delete",
    "erase": "delete",
    "history": "log",
    "find": "search",
    "lookup": "search",
    "make": "create",
    "env": "environment",
    "tz": "timezone",
}
_WORD = re.compile(r"[A-Za-z0-9]+")


def _stem(word: str) -> str:
    # Plurals only: "entities" -> "entity", "branches" -> "branch", "files" -> "file"; "status" stays.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lowercase, stemmed search terms: identifiers split into words, stopwords and 1-letter words dropped."""
    terms: list[str] = []
    for chunk in _WORD.findall(text):
        for word in split_words(chunk):
            word = word.lower()
            if len(word) > 1 and word not in _STOPWORDS:
                terms.append(_stem(word))
    return terms


def _parameter_text(properties: Mapping[str, dict[str, Any]], depth: int) -> Iterator[tuple[str, float]]:
    for name, schema in properties.items():
        yield name, PARAM_NAME if depth == 0 else PARAM_TEXT
        yield from _schema_text(schema, depth)


def _schema_text(schema: dict[str, Any], depth: int) -> Iterator[tuple[str, float]]:
    description = schema.get("description")
    if isinstance(description, str):
        yield description, PARAM_TEXT
    enum = [v for v in as_array(schema.get("enum")) if isinstance(v, str)]
    if enum:
        yield " ".join(enum), PARAM_TEXT
    if depth >= _NESTED_DEPTH:
        return
    yield from _parameter_text(properties_of(schema), depth + 1)
    for key in ("items", "additionalProperties"):
        sub = as_object(schema.get(key))
        if sub is not None:
            yield from _schema_text(sub, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in as_array(schema.get(key)):
            sub = as_object(option)
            if sub is not None:
                yield from _schema_text(sub, depth + 1)


def _document(entry: CatalogEntry) -> dict[str, float]:
    fields: list[tuple[str, float]] = [
        (entry.tool_name, NAME),
        (entry.server_name, SERVER),
        (entry.title or "", TITLE),
        (entry.description, DESCRIPTION),
        *_parameter_text(properties_of(entry.input_schema), 0),
    ]
    weights: defaultdict[str, float] = defaultdict(float)
    for text, weight in fields:
        for term in tokenize(text):
            weights[term] += weight
    return dict(weights)


class _Index:
    """Term weights per tool, document frequencies and lengths: everything BM25 needs."""

    def __init__(self, catalog: Catalog) -> None:
        self.entries = catalog.entries
        self.docs = [_document(entry) for entry in self.entries]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.avg_length = (sum(self.lengths) / len(self.docs)) if self.docs else 1.0
        frequency: defaultdict[str, int] = defaultdict(int)
        for doc in self.docs:
            for term in doc:
                frequency[term] += 1
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}

    def query_terms(self, query: str) -> list[str]:
        terms = tokenize(query)
        terms += [_SYNONYMS[t] for t in terms if t in _SYNONYMS]
        # "time zone" finds "timezone", "file system" finds "filesystem": join neighbours we know.
        joined = [a + b for a, b in itertools.pairwise(terms) if a + b in self.idf]
        return list(dict.fromkeys(terms + joined))

    def score(self, i: int, terms: list[str]) -> float:
        doc, norm = self.docs[i], K1 * (1 - B + B * self.lengths[i] / self.avg_length)
        total = 0.0
        for term in terms:
            tf = doc.get(term, 0.0)
            if tf:
                total += self.idf[term] * tf * (K1 + 1) / (tf + norm)
        return total


_indexes: weakref.WeakKeyDictionary[Catalog, _Index] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _index(catalog: Catalog) -> _Index:
    with _lock:
        index = _indexes.get(catalog)
        if index is None:
            index = _indexes[catalog] = _Index(catalog)
        return index


def _exact(entry: CatalogEntry, query: str) -> bool:
    names = (entry.qualified, entry.python_name, entry.tool_name, f"{entry.server_name}.{entry.tool_name}")
    return query.removeprefix("tools.") in names


def search(
    catalog: Catalog, query: str, server: str | None = None, limit: int = 10
) -> list[tuple[CatalogEntry, float]]:
    """The best `limit` tools for `query`, best first; a tool named exactly by the query comes first.

    `server` (identifier or original name) keeps one server's tools; KeyError if it is unknown.
    """
    server_id: str | None = None
    if server is not None:
        status = catalog.server(server)
        if status is None:
            raise KeyError(server)
        server_id = status.identifier
    index = _index(catalog)
    terms = index.query_terms(query)
    query = query.strip()
    hits: list[tuple[bool, float, int]] = []
    for i, entry in enumerate(index.entries):
        if server_id is not None and entry.server_id != server_id:
            continue
        exact = _exact(entry, query)
        score = index.score(i, terms)
        if exact or score > 0:
            hits.append((exact, score, i))
    hits.sort(key=lambda hit: (not hit[0], -hit[1], hit[2]))
    return [(index.entries[i], round(score, 4)) for _, score, i in hits[: max(limit, 0)]]
