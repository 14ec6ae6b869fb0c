"""Search terms: identifiers split into words, stopwords dropped, Snowball stems, and a reviewed
table of the synonyms and abbreviations people use for what tool authors spell otherwise.

The table is data a reviewer can read: each group is a set of phrases that mean the same thing
to someone looking for a tool. Keep groups narrow; a broad group ("get", "fetch", "read", "show")
pulls every tool into every search. The search evaluation (`make bench`) measures each change.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from gateway.catalog._naming import split_words

__all__ = ["STOPWORDS", "SYNONYM_GROUPS", "content_words", "stem", "synonyms", "terms", "words"]

STOPWORDS = frozenset(
    {
        "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do",
        "does", "for", "from", "give", "how", "i", "if", "in", "into", "is", "it", "its", "let", "me",
        "my", "need", "of", "on", "one", "or", "our", "please", "should", "so", "some", "that", "the",
        "their", "them", "then", "there", "these", "this", "those", "to", "up", "us", "use", "using",
        "via", "want", "was", "we", "what", "whats", "when", "where", "which", "who", "will", "with",
        "would", "you", "your",
    }
)  # fmt: skip

# Phrases that mean one thing to someone looking for a tool. Words are matched after stemming, so
# "folders" and "folder" are one entry; a phrase of two words matches those words side by side.
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    # code hosting
    ("pull request", "pr", "prs", "merge request", "mr"),
    ("repository", "repo", "repos", "project"),
    ("github", "gh"),
    ("issue", "ticket", "bug", "defect", "issue tracker", "tracker", "tix"),
    ("commit", "changeset"),
    ("review", "approve", "lgtm", "ptal"),
    ("fork", "clone"),
    ("ci", "checks", "status checks", "build status"),
    # files and shells
    ("directory", "folder", "dir"),
    ("create directory", "mkdir"),
    ("list", "ls", "enumerate"),
    ("delete", "remove", "erase", "rm", "drop", "nuke", "wipe", "get rid"),
    ("move", "rename", "mv", "reparent"),
    ("copy", "cp", "duplicate"),
    ("read", "cat", "open", "contents"),
    ("search", "grep", "find", "lookup", "look up", "locate"),
    ("command", "shell", "terminal", "bash"),
    ("session", "shells", "terminals"),
    ("execute", "run", "exec", "start"),
    ("process", "pid", "program"),
    ("kill", "terminate", "abort", "stop", "cancel"),
    ("environment", "env"),
    ("edit", "modify", "change", "fix"),
    ("metadata", "info", "stat"),
    ("configuration", "config", "cfg", "settings"),
    ("pdf", "document"),
    # web and browsers
    ("navigate", "go to", "visit", "open url", "browse", "load"),
    ("screenshot", "capture", "snapshot"),
    ("click", "press", "tap"),
    ("type", "fill", "enter text", "input"),
    ("dialog", "popup", "alert", "modal"),
    ("network request", "xhr", "http request", "api call"),
    ("webpage", "web page", "website", "site", "url", "article"),
    ("download", "fetch", "scrape", "extract"),
    ("javascript", "js", "script"),
    ("console", "log message"),
    ("tab", "window"),
    ("hover", "mouse over"),
    ("drag", "drop"),
    ("scroll", "page down"),
    ("upload", "attach"),
    ("resize", "viewport", "window size", "screen size", "phone sized", "mobile"),
    ("select option", "dropdown", "combo box", "picker"),
    ("dark mode", "color scheme", "media"),
    # chat, docs, wikis
    ("message", "msg", "msgs", "post", "chat", "tell", "announce", "dm"),
    ("reply", "respond", "answer", "thread"),
    ("reaction", "emoji", "react"),
    ("page", "wiki", "doc", "document"),
    ("child pages", "sub pages", "subpages", "children"),
    ("comment", "note", "remark"),
    ("inline comment", "highlighted"),
    ("user", "member", "person", "people", "profile"),
    ("organization", "org", "orgs"),
    ("label", "tag"),
    ("notify", "notification", "alert"),
    ("restriction", "permission", "lock", "access"),
    ("history", "version", "changed"),
    ("transition", "move to", "status"),
    # data
    ("database", "db", "dbs"),
    ("postgres", "postgresql", "pg", "psql"),
    ("mongodb", "mongo"),
    ("collection", "coll", "colls", "table"),
    ("record", "row", "entry", "document", "docs"),
    ("aggregate", "group by", "sum", "count", "total", "pipeline"),
    ("index", "indexes", "indices"),
    ("schema", "structure", "columns", "fields"),
    ("query", "sql", "select"),
    ("insert", "add row"),
    ("statistic", "stats", "metrics", "usage"),
    ("storage size", "disk space", "disk usage", "space"),
    ("explain", "slow", "query plan"),
    ("disconnect", "close connection"),
    # memory and notes
    ("remember", "memorize", "recall", "memory", "knowledge graph"),
    ("forget", "delete"),
    ("entity", "node"),
    ("relation", "relationship", "link", "edge", "unlink"),
    ("observation", "fact"),
    # time and places
    ("current", "today", "now", "latest"),
    ("current time", "what time", "date"),
    ("time zone", "timezone", "tz"),
    ("convert", "translate", "transform"),
    ("geocode", "coordinates", "lat", "lng", "latitude", "longitude", "address", "addr"),
    ("directions", "route", "eta", "travel time", "commute", "get to"),
    ("distance matrix", "distances", "travel times"),
    ("elevation", "altitude", "sea level", "height"),
    ("places", "nearby", "stores", "shops", "restaurants", "local businesses"),
    # ops
    ("kubernetes", "k8s", "kubectl", "cluster"),
    ("context", "ctx"),
    ("container", "docker"),
    ("deployment", "deploy", "rollout"),
    ("log", "logs", "history"),
    ("output", "prints", "stdout", "log"),
    ("error", "exception", "crash", "failure"),
    ("event", "occurrence"),
    ("alarm", "alert"),
    ("restart", "reboot", "restarting"),
    ("scale", "replicas", "replica count"),
    ("port forward", "localhost", "reachable locally"),
    ("api resources", "kinds of objects", "resource types"),
    ("describe", "why", "troubleshoot", "diagnose"),
    # generic actions worth bridging
    ("create", "make", "new", "add", "open", "spin up", "start", "raise"),
    ("update", "edit", "modify", "set"),
    ("get", "show", "view", "display", "retrieve"),
    ("close", "dismiss"),
    ("send", "post", "publish"),
    ("sum", "add numbers", "plus"),
    ("compress", "zip", "gzip"),
    ("image", "picture", "photo", "png"),
    ("environment variable", "env var", "envvar"),
)

_WORD = re.compile(r"[A-Za-z0-9]+")
_MIN_STEM_CHARS = 4  # "aws", "prs", "dns" are names, not plurals


@functools.cache
def _stemmer() -> Any:
    # Loaded at the first stem, not at import: snowballstemmer's package loads every language's stemmer.
    import snowballstemmer  # pyright: ignore[reportMissingTypeStubs]

    return snowballstemmer.stemmer("english")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


# A Snowball stemmer keeps the word it is stemming in its own fields, so two threads stemming at once
# (two searches, or a search and the warm-up) get each other's stems or an IndexError.
_stemming = threading.Lock()


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lowercase word; words under four letters are kept whole."""
    if len(word) < _MIN_STEM_CHARS:
        return word
    with _stemming:
        return str(_stemmer().stemWord(word))


def words(text: str) -> list[str]:
    """Lowercase words, identifiers split (`getFileInfo`, `get_file_info`), stopwords kept."""
    return [word.lower() for chunk in _WORD.findall(text) for word in split_words(chunk)]


def content_words(text: str) -> list[str]:
    """The words of `text` that search uses: stopwords and 1-letter words dropped, not yet stemmed."""
    return [word for word in words(text) if len(word) > 1 and word not in STOPWORDS]


def terms(text: str) -> list[str]:
    """Lowercase, stemmed search terms: identifiers split into words, stopwords and 1-letter words dropped."""
    return [stem(word) for word in content_words(text)]


def _phrase(text: str) -> tuple[str, ...]:
    # Built like a query's terms, so "go to" is ("go",): stopwords are gone from queries too.
    return tuple(terms(text))


@functools.cache
def _table() -> dict[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    table: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for group in SYNONYM_GROUPS:
        phrases = [p for p in dict.fromkeys(_phrase(text) for text in group) if p]
        for phrase in phrases:
            partners = table.setdefault(phrase, [])
            partners.extend(p for p in phrases if p != phrase and p not in partners)
    return {phrase: tuple(partners) for phrase, partners in table.items()}


def synonyms(phrase: tuple[str, ...]) -> tuple[str, ...]:
    """The terms of every phrase the table gives as meaning the same as `phrase` (stemmed terms)."""
    return tuple(dict.fromkeys(term for partner in _table().get(phrase, ()) for term in partner))
