"""Searching and reading the catalog's documentation (`search_docs`, a snippet's `search()` and `help()`):
a sub-face, since it is what the gateway answers with, apart from the calls it maps.

The search itself (its index, ranking, spelling and rendering) loads when one of its functions is
first asked for, so a gateway answers its client's handshake before it loads them."""

import typing

from gateway.catalog._query import DEFAULT_SEARCH_LIMIT, Detail, SearchRefused
from gateway.catalog._semantic import SemanticSearch, semantic_search

if typing.TYPE_CHECKING:
    from gateway.catalog._discovery import read_docs
    from gateway.catalog._render import render_search, still_starting
    from gateway.catalog._search import check_search, fits, warm_search

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


def __getattr__(name: str) -> object:
    """A function of the search, imported with the search the first time one is asked for."""
    if name not in ("check_search", "fits", "read_docs", "render_search", "still_starting", "warm_search"):
        raise AttributeError(f"module 'gateway.catalog.docs' has no attribute {name!r}")
    from gateway.catalog._discovery import read_docs
    from gateway.catalog._render import render_search, still_starting
    from gateway.catalog._search import check_search, fits, warm_search

    functions = (check_search, fits, read_docs, render_search, still_starting, warm_search)
    globals().update((function.__name__, function) for function in functions)
    return globals()[name]
