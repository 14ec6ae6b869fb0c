"""Ranked tool search: BM25 over one weighted document per tool, with query understanding on top.

A tool's document is its name words, server name, title, description, parameter names and
parameter descriptions, each field weighted inside the term frequency (BM25 takes a tf that is not
an integer). A query is read as concepts, one per word: each concept also matches its synonyms
(the table in `_vocabulary`) and, for a word the catalog does not know, its spelling corrections,
and scores as the best of its variants, so a synonym never counts twice. Tools that match more of
the query's concepts rank higher (a coordination factor), and a server named in the query ranks
its own tools first. The weights are tuned on the search evaluation (tests/search_eval).

Before any of that, the query is read for what its words alone do not say (`_intent`: shell
commands, saving, questions, people). With the `semantic` extra, the lexical ranking is fused with
the query's similarity to every tool (`_semantic`): each tool's text is embedded once per catalog,
each query as it comes.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._intent import (
    ENTITY_WORDS,
    INDEFINITE_PRONOUNS,
    KINDS_OF_NAMES,
    KNOWLEDGE_WORDS,
    SAVE_WORDS,
    SERVER_AFTER,
    SERVER_BEFORE,
    QueryIntent,
    asks_about_someone,
    name_candidates,
    read_intent,
    steps,
    tool_finds,
    tool_writes,
)
from gateway.catalog._query import DEFAULT_SEARCH_LIMIT, SearchRefused
from gateway.catalog._semantic import Adapter, Embedder, SemanticSearch, fuse
from gateway.catalog._signatures import first_sentence
from gateway.catalog._spelling import Speller
from gateway.catalog._vocabulary import STOPWORDS, content_words, stem, synonyms, terms, words
from gateway.shared import as_array, as_object, properties_of
from guest._precheck import MAX_NAME_CHARS

__all__ = [
    "BASELINE",
    "MAX_CORRECTED_WORDS",
    "TUNED",
    "Hit",
    "SearchRefused",
    "Tuning",
    "check_search",
    "corrected_query",
    "search",
    "tool_text",
    "warm_search",
]

K1 = 1.2
B = 0.75
WEAK_COVERAGE = 0.5  # a best hit matching less of the query than this is reported as weak
# With meaning fused in, a best hit scoring under this is reported as weak instead, when the tool
# ranked after it is not known; set by leave-servers-out so the fine-tuned model reports at least
# as many no-tool queries weak as the base model did (docs/search.md; checked again with the 7-bit
# build: 0.44 is the first to reach it, so 0.445 still does).
WEAK_FUSED_SCORE = 0.445
# Otherwise a best hit is weak when this weighted sum of its fused score, the next tool's, its
# cosine and the share of the query its words matched is under 1: a request some tool serves
# usually has that tool's neighbours near it too, one no tool serves is near one tool by chance.
# Set on the development sets' queries, those no tool serves against the others, each writer's
# scored by a query adapter not trained on them, then all scaled by one factor so the fine-tuned
# model, which scores higher, reports as many no-tool queries weak as before (docs/search.md):
# 1/1.08 for the 8-bit build, 1/1.086 since the weights are quantized in 7 bits (three of 1,180
# no-tool queries short at 1/1.08; docs/search.md, "The thresholds with 7-bit weights").
FIT_WEIGHTS = (1.06, 0.64, 0.69, 0.11)
_NESTED_DEPTH = 3  # how deep parameter schemas are read for nested property names and descriptions
# A word the catalog does not know names a person, place or time when the model puts it this close
# to one of the phrases of that kind in KINDS_OF_NAMES (set on names alone, docs/search.md).
NAME_KIND_SIMILARITY = (0.415, 0.45, 0.47)
MAX_UNKNOWN_NAMES = 2  # names of one query checked against KINDS_OF_NAMES: a forward pass each
MAX_CORRECTED_WORDS = 8
"""Unknown words of one query that are spelling-corrected; the rest are searched as written, so
that a query's correction work is bounded by this and the speller's word cap, not by its length."""


def check_search(query: str, server: str | None, max_query_chars: int) -> None:
    """Refuse a query past `max_query_chars` (`search.max_query_chars`) or a server name past the
    name cap, before any work is spent on them; raises SearchRefused."""
    if len(query) > max_query_chars:
        raise SearchRefused(
            f"the query is {len(query):,} characters, over search.max_query_chars ({max_query_chars:,}): "
            "search with a few words saying what the tool should do"
        )
    if server is not None and len(server) > MAX_NAME_CHARS:
        raise SearchRefused(
            f"the server name is {len(server):,} characters, over the {MAX_NAME_CHARS}-character cap on "
            "names: search with an empty query to list the servers"
        )


@dataclass(frozen=True)
class Tuning:
    """Every weight search uses. Field weights are multiples of one description word."""

    name: float = 1.5
    title: float = 2.66
    server: float = 5.3
    description: float = 1.0  # its first sentence, which says what the tool does
    details: float = 0.2  # the sentences after it, often usage notes that match every query a little
    detail_words: int = 80  # how many words of those count at all
    param_name: float = 0.1
    param_text: float = 0.17
    synonym: float = 0.45  # a synonym counts this much of the word the user wrote
    correction: float = 0.5  # a spelling correction, likewise
    coverage_power: float = 0.75  # how strongly matching more of the query outranks matching one word well
    server_boost: float = 1.5  # a named server's tools score (1 + this) times as much
    write_boost: float = 0.5  # a query saving something: tools that write score (1 + this) times as much
    entity: float = 0.45  # a person or thing asked about: how much tools about entities count for it
    write_similarity: float = (
        0.05  # with meaning: a query saving something adds this to writing tools' similarity
    )
    knowledge_boost: float = 0.5  # a query saving something or asking about someone: tools keeping knowledge
    knowledge_similarity: float = 0.05  # the same, added to their similarity
    name_part: float = 0.25  # a word used only inside a joined name (`search-api`) counts this much
    find_boost: float = 0.5  # a question over a set of things: tools that search or list
    find_similarity: float = 0.05  # the same, added to their similarity


TUNED = Tuning()
"""The weights search runs with: coordinate search on the development queries (tests/search_eval/tune.py),
kept because the held-out queries improved too."""

BASELINE = Tuning(synonym=0.0, correction=0.0, coverage_power=0.0, server_boost=0.0)
"""Plain BM25 over the same documents: what `make bench` measures the query understanding against."""


@dataclass(frozen=True)
class Hit:
    """One ranked tool: its score and the share of the query's concepts it matched (0..1); with the
    semantic re-rank, also its cosine similarity to the query."""

    entry: CatalogEntry
    score: float
    coverage: float
    similarity: float | None = None
    elsewhere: str | None = None  # a product or service the query names that no tool knows
    runner_up: float | None = None  # with meaning: the fused score of the tool ranked after it

    @property
    def weak(self) -> bool:
        if self.coverage >= 1.0 and self.similarity is not None:
            return False  # a tool named exactly
        if self.elsewhere is not None:
            return True
        if self.similarity is None:
            return self.coverage < WEAK_COVERAGE
        if self.runner_up is None:
            return self.score < WEAK_FUSED_SCORE
        evidence = (self.score, self.runner_up, self.similarity, self.coverage)
        return sum(w * x for w, x in zip(FIT_WEIGHTS, evidence, strict=True)) < 1.0


def _parameter_text(
    properties: Mapping[str, dict[str, Any]], depth: int, tuning: Tuning
) -> Iterator[tuple[str, float]]:
    for name, schema in properties.items():
        yield name, tuning.param_name if depth == 0 else tuning.param_text
        yield from _schema_text(schema, depth, tuning)


def _schema_text(schema: dict[str, Any], depth: int, tuning: Tuning) -> Iterator[tuple[str, float]]:
    description = schema.get("description")
    if isinstance(description, str):
        yield description, tuning.param_text
    enum = [v for v in as_array(schema.get("enum")) if isinstance(v, str)]
    if enum:
        yield " ".join(enum), tuning.param_text
    if depth >= _NESTED_DEPTH:
        return
    yield from _parameter_text(properties_of(schema), depth + 1, tuning)
    for key in ("items", "additionalProperties"):
        sub = as_object(schema.get(key))
        if sub is not None:
            yield from _schema_text(sub, depth + 1, tuning)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in as_array(schema.get(key)):
            sub = as_object(option)
            if sub is not None:
                yield from _schema_text(sub, depth + 1, tuning)


SERVER_TERM = "server:"
"""Marks a term of a tool's server name: it counts only when the query names the server as one."""


def _document(entry: CatalogEntry, tuning: Tuning) -> dict[str, float]:
    # Some servers write pages of usage notes into a description: counted whole, they match every
    # query a little (measured: top-3 drops 2 points on both query sets). The first sentence says
    # what the tool does.
    summary = first_sentence(entry.description)
    fields: list[tuple[str, float]] = [
        (entry.tool_name, tuning.name),
        (entry.title or "", tuning.title),
        (summary, tuning.description),
        (" ".join(entry.description.split()[len(summary.split()) :][: tuning.detail_words]), tuning.details),
        *_parameter_text(properties_of(entry.input_schema), 0, tuning),
    ]
    weights: defaultdict[str, float] = defaultdict(float)
    for text, weight in fields:
        for term in terms(text):
            weights[term] += weight
    for term in _server_terms(entry.server_name):
        weights[SERVER_TERM + term] += tuning.server
    return dict(weights)


def _server_terms(name: str) -> set[str]:
    """The terms a query may name a server by: its name whole (`googlemaps`), stemmed, or its words."""
    return {term for term in {stem(name.lower()), "".join(terms(name)), *terms(name)} if len(term) > 2}


@dataclass(frozen=True)
class _Concept:
    """One word of the query with the terms that stand for it and how much each counts."""

    variants: tuple[tuple[str, float], ...]


def _names(entry: CatalogEntry) -> tuple[str, ...]:
    return (entry.qualified, entry.python_name, entry.tool_name, f"{entry.server_name}.{entry.tool_name}")


MIN_DROPPED_LETTER_CHARS = 5
"""A word this long missing one letter of a known word is that word mistyped; a shorter one is as
often another word ("idea" is not "ideal")."""


def _slip_of_typing(typed: str, known: str) -> bool:
    """Whether `typed` is `known` with two neighbouring letters swapped ("serach") or, in a longer
    word, one letter dropped ("remeber"): the typos people make. Another letter in its place is as
    often a different word ("stale" is not "scale", "prod" not "pod")."""
    if len(typed) == len(known):
        diff = [i for i, (a, b) in enumerate(zip(typed, known, strict=True)) if a != b]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and typed[diff[0]] == known[diff[1]]
            and typed[diff[1]] == known[diff[0]]
        )
    if len(known) == len(typed) + 1 and len(typed) >= MIN_DROPPED_LETTER_CHARS:
        return any(known[:i] + known[i + 1 :] == typed for i in range(len(known)))
    return False


# Only from the start of a run of letters and digits: from inside one, each start would rescan it.
_JOINED = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+")


def _words_inside_names(text: str) -> set[str]:
    """Words the query uses only inside a joined name (`search-api`, `slo_daily`): the name of a
    service, table or branch, which says little about what to do with it."""
    inside = {word for name in _JOINED.findall(text) for word in words(name)}
    alone = set(words(_JOINED.sub(" ", text)))
    return inside - alone


class _Index:
    """Postings, document frequencies and lengths: everything BM25 needs, plus servers by name."""

    def __init__(self, catalog: Catalog, tuning: Tuning) -> None:
        self.entries = catalog.entries
        self.tuning = tuning
        docs = [_document(entry, tuning) for entry in self.entries]
        lengths = [sum(doc.values()) for doc in docs]
        avg_length = (sum(lengths) / len(docs)) if docs else 1.0
        postings: defaultdict[str, list[tuple[int, float]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            norm = K1 * (1 - B + B * lengths[i] / avg_length)
            for term, tf in doc.items():
                postings[term].append((i, tf * (K1 + 1) / (tf + norm)))  # BM25's tf part, ready-made
        n = len(docs)
        self.idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}
        self.postings = dict(postings)
        # Each name a query may give a tool by exactly (`git_log`, `git.git_log`, its Python name).
        self.named: defaultdict[str, set[int]] = defaultdict(set)
        for i, entry in enumerate(self.entries):
            for name in _names(entry):
                self.named[name].add(i)
        # Typos are corrected against stems ("modification" -> "modif" is one edit from "modified"'s
        # "modifi") and against whole words: a typo's stem is often far from its word's ("raed" stems
        # to "ra", "direcitons" to "direciton" while "directions" stems to "direct").
        self.term_speller = Speller([t for t in self.postings if not t.startswith(SERVER_TERM)])
        known_words = {
            word
            for entry in self.entries
            for word in words(f"{entry.tool_name} {entry.title or ''} {entry.description}")
        }
        self.word_speller = Speller(known_words | SAVE_WORDS)
        self.known_words = frozenset(known_words)
        self.writes = {i for i, entry in enumerate(self.entries) if tool_writes(words(entry.tool_name))}
        self.finds = {i for i, entry in enumerate(self.entries) if tool_finds(words(entry.tool_name))}
        knowledge = set(terms(KNOWLEDGE_WORDS))
        self.keeps = {
            i
            for i, entry in enumerate(self.entries)
            if knowledge & set(terms(f"{entry.tool_name} {first_sentence(entry.description)}"))
        }
        # A server is named in a query by its identifier or configured name, whole or by its words.
        self.server_of_term: dict[str, str] = {}
        for status in catalog.servers:
            for name in (status.identifier, status.name):
                for term in _server_terms(name):
                    self.server_of_term.setdefault(term, status.identifier)
        # A server whose name other servers' tools use as a word ("time", "fetch", "git") is named
        # as a server only in a phrase that says so ("on git", "the time server").
        self.ordinary = {stem(word) for word in INDEFINITE_PRONOUNS} | {
            term
            for term, server in self.server_of_term.items()
            if any(self.entries[doc].server_id != server for doc, _ in self.postings.get(term, ()))
        }
        # A word of a longer name that other tools use ("search" of brave_search, "api" of a
        # "billing_api") names no server: "scale search-api" is about a service called that.
        self.ordinary_parts = {
            term
            for status in catalog.servers
            for name in (status.identifier, status.name)
            if len(name_terms := terms(name)) > 1
            for term in name_terms
            if term in self.ordinary
        }

    def _named_servers(self, query: str) -> set[str]:
        """The servers the query names as servers: by a distinctive name anywhere, by an ordinary
        word ("time", "everything") only in a phrase saying it is a server ("on time", "time server")."""
        raw = words(query)
        named: set[str] = set()
        for i, word in enumerate(raw):
            said = (i > 0 and raw[i - 1] in SERVER_BEFORE) or (
                i + 1 < len(raw) and raw[i + 1] in SERVER_AFTER
            )
            for term in (stem(word), *synonyms((stem(word),))):  # "mongo" names mongodb, "gh" github
                server = self.server_of_term.get(term)
                if (
                    server is not None
                    and term not in self.ordinary_parts
                    and (said or term not in self.ordinary)
                ):
                    named.add(server)
        return named

    def without_server_words(self, query: str, named: set[str]) -> str:
        """`query` less the ordinary words that are also a server's name it does not name as a server
        ("undo everything I staged"): the model would read them as that server's."""
        kept = [
            word
            for word in query.split()
            if not (
                (term := stem(word.strip(".,;:!?\"'()").lower())) in self.ordinary
                and self.server_of_term.get(term) not in (None, *named)
            )
        ]
        return " ".join(kept)

    def corrected(self, query: str) -> str:
        """`query` with each lowercase word the catalog does not know (misspelt, most likely)
        replaced by its closest known word, for the first MAX_CORRECTED_WORDS such words; names
        (capitalised) and identifiers are left as written."""
        tokens = query.split(" ")
        corrected = 0
        for i, token in enumerate(tokens):
            word = token.strip(".,;:!?\"'()").split("'")[0]  # "waht's" is "waht" and "'s"
            if not (word.isalpha() and word.islower()) or self._known_term(word):
                continue
            if corrected >= MAX_CORRECTED_WORDS:
                break
            corrected += 1
            # A typo seldom changes the first letter: between two slips, keep the first letter.
            likely = sorted(
                (c for c in self.word_speller.corrections(word) if _slip_of_typing(word, c)),
                key=lambda c: c[0] != word[0],
            )
            if likely:
                tokens[i] = token.replace(word, likely[0])
        return " ".join(tokens)

    def _known_term(self, word: str) -> bool:
        term = stem(word)
        return (
            word in STOPWORDS
            or word in self.known_words
            or term in self.postings
            or term in self.server_of_term
            or bool(synonyms((term,)))
        )

    def unknown_names(self, query: str, intent: QueryIntent) -> list[str]:
        """Words of `query` that may name a product or service and that no tool knows, not even
        misspelt: where the request would go if the catalog had a server for it."""
        if intent.saves or asks_about_someone(query):  # a name to remember or to look up: memory's
            return []
        found: list[str] = []
        for word in name_candidates(query):
            lower = word.lower()
            term = stem(lower)
            known = (
                lower in STOPWORDS
                or lower in self.known_words
                or term in self.postings
                or term in self.server_of_term
                or synonyms((term,))
                or self.word_speller.corrections(lower)
                or self.term_speller.corrections(term)
            )
            if not known and word not in found:
                found.append(word)
        return found[:MAX_UNKNOWN_NAMES]

    def concepts(self, intent: QueryIntent) -> tuple[list[_Concept], set[str]]:
        """The query's concepts, and the servers it names."""
        query_words = content_words(intent.text)
        query_terms = [stem(word) for word in query_words]
        names = {name.lower() for name in intent.entities}
        concepts: list[_Concept] = []
        unknown = [
            i
            for i, term in enumerate(query_terms)
            if term not in self.postings and term not in self.server_of_term and query_words[i] not in names
        ]
        corrected = set(unknown[:MAX_CORRECTED_WORDS])
        named = self._named_servers(intent.text)
        inside_names = _words_inside_names(intent.text)
        for i, term in enumerate(query_terms):
            variants: dict[str, float] = {term: 1.0}
            server = self.server_of_term.get(term)
            if server in named:
                variants[SERVER_TERM + term] = 1.0
            if i in corrected:
                corrections = self.term_speller.corrections(term)
                corrections += map(stem, self.word_speller.corrections(query_words[i]))
                for correction in corrections:
                    variants.setdefault(correction, self.tuning.correction)
            # The word alone, and the two-word phrases it is part of ("pull request" -> "pr").
            phrases: list[tuple[str, ...]] = [(term,)]
            if i > 0:
                phrases.append((query_terms[i - 1], term))
            if i + 1 < len(query_terms):
                phrases.append((term, query_terms[i + 1]))
            for phrase in phrases:
                for partner in synonyms(phrase):
                    if partner not in query_terms:
                        variants.setdefault(partner, self.tuning.synonym)
                        if self.server_of_term.get(partner) in named:
                            variants.setdefault(SERVER_TERM + partner, self.tuning.synonym)
            if query_words[i] in inside_names:
                variants = {t: w * self.tuning.name_part for t, w in variants.items()}
            concepts.append(_Concept(tuple(variants.items())))
        # "time zone" finds "timezone", "file system" finds "filesystem": join neighbours we know.
        for a, b in itertools.pairwise(query_terms):
            if a + b in self.postings:
                concepts.append(_Concept(((a + b, 1.0),)))
        if intent.entities:  # "what do we know about Carol": tools that keep people and things
            concepts.append(_Concept(tuple((term, self.tuning.entity) for term in terms(ENTITY_WORDS))))
        return concepts, named

    def scores(self, concepts: list[_Concept]) -> tuple[dict[int, float], dict[int, int]]:
        """Per tool: the sum over concepts of each concept's best variant, and how many matched."""
        totals: defaultdict[int, float] = defaultdict(float)
        matched: defaultdict[int, int] = defaultdict(int)
        for concept in concepts:
            best: dict[int, float] = {}
            for term, weight in concept.variants:
                idf = self.idf.get(term)
                if idf is None or not weight:
                    continue
                for doc, tf_part in self.postings[term]:
                    value = weight * idf * tf_part
                    if value > best.get(doc, 0.0):
                        best[doc] = value
            for doc, value in best.items():
                totals[doc] += value
                matched[doc] += 1
        return totals, matched


_indexes: weakref.WeakKeyDictionary[Catalog, dict[Tuning, _Index]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_MAX_TUNINGS = 4


def _index(catalog: Catalog, tuning: Tuning) -> _Index:
    origin = catalog.origin  # a caller's view shares its catalog's index
    with _lock:
        built = _indexes.setdefault(origin, {})
        index = built.get(tuning)
        if index is None:
            if len(built) >= _MAX_TUNINGS:  # only tuning experiments try many; keep the newest
                del built[next(iter(built))]
            index = built[tuning] = _Index(origin, tuning)
        return index


PURPOSE_WORDS = 24
"""Words of a server's instructions that say what it is for, embedded with each of its tools; more
would outweigh what the tool itself does in a mean of token vectors."""


def tool_text(entry: CatalogEntry, purpose: str | None = None) -> str:
    """What search by meaning embeds for a tool: name words, server, title, what it does, parameters,
    and the first words of its server's own instructions (`purpose`), if it gave any."""
    name = " ".join(words(entry.tool_name))
    parameters = ", ".join(" ".join(words(p)) for p in properties_of(entry.input_schema))
    title = f"{entry.title} " if entry.title else ""
    server = entry.server_name
    if purpose:
        server += ": " + " ".join(first_sentence(purpose).split()[:PURPOSE_WORDS])
    return f"{name} ({server}). {title}{first_sentence(entry.description)} Parameters: {parameters}"


def _purposes(catalog: Catalog) -> dict[str, str | None]:
    return {status.identifier: status.instructions for status in catalog.servers}


_rows: weakref.WeakKeyDictionary[Catalog, tuple[Embedder, Adapter | None, Any]] = weakref.WeakKeyDictionary()
_rows_lock = threading.Lock()  # held while a catalog's tools are embedded: the first search pays, once


def _tool_rows(catalog: Catalog, embedder: Embedder, adapter: Adapter | None = None) -> Any:
    with _rows_lock:
        origin = catalog.origin
        built = _rows.get(origin)
        if built is None or built[0] is not embedder or built[1] is not adapter:
            purposes = _purposes(origin)
            texts = [tool_text(entry, purposes.get(entry.server_id)) for entry in origin.entries]
            rows = embedder.encode(texts)
            built = _rows[origin] = (embedder, adapter, rows if adapter is None else adapter.rows(rows))
        return built[2]


def _similarities(
    catalog: Catalog, embedder: Embedder, adapter: Adapter | None, query: str
) -> Sequence[float]:
    """The query's cosine to every tool of `catalog`, through the query adapter when there is one."""
    products = embedder.similarities(query, _tool_rows(catalog, embedder, adapter))
    return products if adapter is None else adapter.similarities(products)


def _embedder(semantic: SemanticSearch | None) -> Embedder | None:
    if semantic is None:
        return None
    if semantic.embedder is None:
        semantic.start()  # lazily, at the first search; searches are lexical until it is loaded
    return semantic.embedder


def warm_search(catalog: Catalog) -> None:
    """Build what searching `catalog` needs (the index; with the search model loaded, its tools'
    embeddings), so that the first search does not pay for it."""
    _index(catalog, TUNED)
    semantic = catalog.semantic
    if semantic is not None and semantic.embedder is not None:
        _tool_rows(catalog, semantic.embedder, semantic.adapter)


def fits(catalog: Catalog, query: str) -> bool:
    """Whether a tool of `catalog` clearly fits `query`: search_docs would not answer that none does."""
    hits = search(catalog, query, limit=1)
    return bool(hits) and not hits[0].weak


TAIL_SHARE = 0.5
"""Past the first `DEFAULT_SEARCH_LIMIT` hits, a tool that shares no word with the query is kept only
when it scores at least this share of the best: asked for 50 tools, a query that 12 fit answers those
12, not 38 more that only their meaning placed anywhere (docs/search.md)."""


def search(
    catalog: Catalog, query: str, server: str | None = None, limit: int = 5, tuning: Tuning = TUNED
) -> list[Hit]:
    """The best `limit` tools for `query`, best first; a tool named exactly by the query comes first.
    For a request of several steps, the best tool of each step follows the best for the whole.

    `server` (identifier or original name) keeps one server's tools; KeyError if it is unknown.
    """
    server_id: str | None = None
    if server is not None:
        status = catalog.server(server)
        if status is None:
            raise KeyError(server)
        server_id = status.identifier
    index = _index(catalog, tuning)
    query = query.strip()
    corrected = index.corrected(query)
    hits = _ranked(catalog, index, query, corrected, server_id, limit)
    if limit < 2 or not hits or query.removeprefix("tools.") in index.named:
        return _without_tail(hits)
    # A request of several steps is labelled, and meant, by any of them: the whole query's ranking
    # favours the step with the most words, so each step's own best tool gets a place near the top.
    firsts = [hit for step in steps(corrected) for hit in _ranked(catalog, index, step, step, server_id, 1)]
    merged: dict[str, Hit] = {}
    for hit in [hits[0], *firsts, *hits[1:]]:
        merged.setdefault(hit.entry.qualified, hit)
    return _without_tail(list(merged.values())[:limit])


def _without_tail(hits: list[Hit]) -> list[Hit]:
    """`hits` less those past the first few that neither share a word with the query nor score near
    the best (`TAIL_SHARE`)."""
    if len(hits) <= DEFAULT_SEARCH_LIMIT:
        return hits
    floor = TAIL_SHARE * hits[0].score
    tail = hits[DEFAULT_SEARCH_LIMIT:]
    return hits[:DEFAULT_SEARCH_LIMIT] + [hit for hit in tail if hit.coverage > 0 or hit.score >= floor]


def _ranked(
    catalog: Catalog, index: _Index, query: str, corrected: str, server_id: str | None, limit: int
) -> list[Hit]:
    """The best `limit` tools for one query (or one step of it), `corrected` its slips of typing."""
    tuning = index.tuning
    intent = read_intent(corrected, index.known_words)
    concepts, named = index.concepts(intent)
    totals, matched = index.scores(concepts)
    exact = index.named.get(query.removeprefix("tools."), set())
    ranked: list[tuple[bool, float, int, float]] = []
    for i in totals.keys() | exact:
        entry = index.entries[i]
        if server_id is not None and entry.server_id != server_id:
            continue
        coverage = matched.get(i, 0) / len(concepts) if concepts else 1.0
        score = totals.get(i, 0.0) * coverage**tuning.coverage_power
        if entry.server_id in named:
            score *= 1 + tuning.server_boost
        if intent.leans:
            score *= _lean(i, intent, index, tuning.write_boost, tuning.knowledge_boost, multiply=True)
            if intent.surveys and i in index.finds:
                score *= 1 + tuning.find_boost
        ranked.append((i not in exact, -score, i, min(coverage, 1.0)))
    ranked.sort()
    embedder = _embedder(catalog.semantic)
    if embedder is not None and catalog.semantic is not None:
        query_text = index.without_server_words(intent.embedded, named)
        similarities = _similarities(catalog, embedder, catalog.semantic.adapter, query_text)
        leaning = list(similarities)
        if intent.leans:
            for i in index.writes | index.keeps:
                leaning[i] += _lean(
                    i, intent, index, tuning.write_similarity, tuning.knowledge_similarity, multiply=False
                )
            if intent.surveys:
                for i in index.finds:
                    leaning[i] += tuning.find_similarity
        product = _product_named(index.unknown_names(query, intent), embedder)
        hits = _fused(index.entries, ranked, (similarities, leaning), server_id, catalog.semantic, limit)
        return [dataclasses.replace(hit, elsewhere=product) for hit in hits] if product else hits
    # A tool named exactly is what the query asked for, whatever the words around it matched.
    return [
        Hit(index.entries[i], round(-negative, 4), coverage if inexact else 1.0)
        for inexact, negative, i, coverage in ranked[: max(limit, 0)]
    ]


def _product_named(names: list[str], embedder: Embedder) -> str | None:
    """The first of `names` (words no tool knows) that is not a person, place or time, by the model:
    a product or service the catalog has no server for ("send it on Discord"); None if there is none."""
    if not names:
        return None
    phrases = [phrase for kind in KINDS_OF_NAMES for phrase in kind]
    rows = embedder.encode(phrases)
    for name in names:
        similarities = list(embedder.similarities(name, rows))
        closest = [max(similarities[i : i + len(kind)]) for i, kind in _spans(KINDS_OF_NAMES)]
        if all(s < floor for s, floor in zip(closest, NAME_KIND_SIMILARITY, strict=True)):
            return name
    return None


def _spans(kinds: tuple[tuple[str, ...], ...]) -> list[tuple[int, tuple[str, ...]]]:
    """Each kind with the index of its first phrase in the flattened list."""
    starts = itertools.accumulate((len(kind) for kind in kinds), initial=0)
    return list(zip(starts, kinds, strict=False))


def _lean(
    i: int, intent: QueryIntent, index: _Index, write: float, knowledge: float, *, multiply: bool
) -> float:
    """How much what a query means moves tool `i`: toward tools that write for a query saving
    something, away from them for a question, toward tools that keep knowledge for either of those
    about a person or thing. A factor (`multiply`) or an amount to add."""
    shift = 0.0
    if i in index.writes and (intent.saves or intent.asks):
        shift += write if intent.saves else -write
    # Saving goes to the tools that keep knowledge by writing it, not those that search it.
    about = intent.entities or intent.recalls
    if i in index.keeps and ((intent.saves and i in index.writes) or (about and not intent.saves)):
        shift += knowledge
    if multiply:
        return (1 + shift) if shift >= 0 else 1 / (1 - shift)
    return shift


def _fused(
    entries: tuple[CatalogEntry, ...],
    ranked: list[tuple[bool, float, int, float]],
    similarities: tuple[Sequence[float], Sequence[float]],
    server_id: str | None,
    semantic: SemanticSearch,
    limit: int,
) -> list[Hit]:
    # Ranked on the similarities leaning with the query's intent; each hit shows the model's own.
    shown, leaning = similarities
    exact = {i for inexact, _, i, _ in ranked if not inexact}
    coverage = {i: (1.0 if i in exact else c) for _, _, i, c in ranked}
    scored = fuse(
        [(i, -negative) for _, negative, i, _ in ranked],
        leaning,
        None if server_id is None else lambda i: entries[i].server_id == server_id,
        semantic.weights,
        max(limit, 0) + 1 + len(exact),  # one more: how close the next tool comes says how well it fits
    )
    scored.sort(key=lambda item: item[0] not in exact)  # stable: a tool named exactly still comes first
    after = [round(score, 4) for _, score in scored[1:]] + [None]
    return [
        Hit(entries[i], round(score, 4), coverage.get(i, 0.0), round(shown[i], 4), runner_up=next_score)
        for (i, score), next_score in zip(scored[: max(limit, 0)], after, strict=False)
    ]


def corrected_query(catalog: Catalog, query: str) -> str:
    """The query as search reads it: each slip of typing the catalog shows ("serach", "remeber")
    put right. A word one other letter away is as often another English word ("mind" is not "find"),
    so it is never suggested in its place."""
    return _index(catalog, TUNED).corrected(query)
