"""Searching and reading the catalog's documentation (`search_docs`, a snippet's `search()` and `help()`):
a sub-face, since it is what the gateway answers with, apart from the calls it maps."""

from gateway.catalog._discovery import read_docs
from gateway.catalog._render import DEFAULT_SEARCH_LIMIT, Detail, render_search, still_starting
from gateway.catalog._search import SearchRefused, check_search, fits, warm_search
from gateway.catalog._semantic import SemanticSearch, semantic_search

__all__ = (
    "DEFAULT_SEARCH_LIMIT",
    "Detail",
    "SearchRefused",
    "SemanticSearch",
    "check_search",
    "fits",
    "read_docs",
    "render_search",
    "semantic_search",
    "still_starting",
    "warm_search",
)
