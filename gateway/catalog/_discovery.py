"""Discovery from inside a snippet: `search()`, `help()` and `dir()` on tools, answered from the catalog.

The guest asks through the host import (`@search`, `@docs`); the answers are the same ranked
signatures and docs `search_docs` shows, from the catalog the run started with (so a policy that
hides a tool hides it here too). A malformed question raises ValueError with what to do instead.
"""

from __future__ import annotations

from typing import Any

from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._render import (
    DEFAULT_SEARCH_LIMIT,
    render_overview,
    server_listing,
    unknown_server,
    with_access_note,
)
from gateway.catalog._search import check_search, search
from gateway.catalog._signatures import first_sentence, full_doc, signature
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from guest._precheck import MAX_NAME_CHARS

__all__ = ["MAX_SEARCH_LIMIT", "read_docs"]

MAX_SEARCH_LIMIT = 50


def _tool_info(catalog: Catalog, entry: CatalogEntry) -> dict[str, Any]:
    return {
        "name": entry.qualified,
        "signature": signature(entry, observed=catalog.observed(entry)),
        "description": first_sentence(entry.description),
        "access": entry.access,
    }


def _optional_text(payload: dict[str, Any], key: str, usage: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{usage}: {key} must be a string, got {type(value).__name__}")
    return value


def _name(payload: dict[str, Any], key: str, usage: str) -> str | None:
    """A server's or tool's name from the question, at most MAX_NAME_CHARS long."""
    value = _optional_text(payload, key, usage)
    if value is not None and len(value) > MAX_NAME_CHARS:
        raise ValueError(
            f"{usage}: {key} is {len(value):,} characters, over the {MAX_NAME_CHARS}-character cap"
        )
    return value


def _search(catalog: Catalog, payload: dict[str, Any], max_query_chars: int) -> list[dict[str, Any]]:
    usage = 'search(query, server=None, limit=5) as in search("create an issue", limit=3)'
    query = _optional_text(payload, "query", usage) or ""
    server = _optional_text(payload, "server", usage)
    check_search(query, server, max_query_chars)
    limit = payload.get("limit", DEFAULT_SEARCH_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ValueError(f"{usage}: limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}")
    if server is not None and catalog.server(server) is None:
        raise ValueError(unknown_server(catalog, server))
    if not query.strip():
        entries = catalog.tools_of(server) if server is not None else catalog.entries
        return [_tool_info(catalog, entry) for entry in entries[:limit]]
    return [_tool_info(catalog, hit.entry) for hit in search(catalog, query, server, limit)]


def _docs(catalog: Catalog, payload: dict[str, Any]) -> dict[str, Any]:
    usage = "help(tools.<server>.<tool>) or dir(tools.<server>)"
    server = _name(payload, "server", usage)
    tool = _name(payload, "tool", usage)
    if server is None:
        return {"names": [s.identifier for s in catalog.servers], "doc": render_overview(catalog)}
    status = catalog.server(server)
    if status is None:
        raise ValueError(unknown_server(catalog, server))
    entries = catalog.tools_of(status.identifier)
    if tool is None:
        # A snippet is already calling tools: search_docs's hint on how to is noise there.
        doc = server_listing(catalog, status, len(entries), "signatures", call_hint=False)
        return {"names": [entry.python_name for entry in entries], "doc": doc}
    entry = catalog.get(f"{status.identifier}.{tool}")
    if entry is None:
        close = catalog.suggest(f"{status.identifier}.{tool}")
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise ValueError(
            f"{status.identifier} has no tool {tool!r}.{hint} dir(tools.{status.identifier}) lists them."
        )
    return {"names": [], "doc": with_access_note(full_doc(entry, catalog.observed(entry)), entry)}


def read_docs(
    catalog: Catalog, service: str, payload: dict[str, Any], max_query_chars: int = DEFAULT_MAX_QUERY_CHARS
) -> Any:
    """The answer to the guest's `@search` (ranked tools, a query of at most `max_query_chars`) or
    `@docs` (names and doc text)."""
    if service == "@search":
        return _search(catalog, payload, max_query_chars)
    if service == "@docs":
        return _docs(catalog, payload)
    raise ValueError(f"unknown discovery service {service!r}")
