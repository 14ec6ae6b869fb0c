"""The text `search_docs` returns: an overview, ranked signatures, or an error the model can act on.

Everything here lands in a model's context, so it is terse: one line per tool, no decoration.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._query import DEFAULT_SEARCH_LIMIT, Detail
from gateway.catalog._search import check_search, corrected_query, search
from gateway.catalog._signatures import full_doc, signature
from gateway.catalog._unknown import MAX_HINTED_SERVERS
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from gateway.children import ChildState

__all__ = [
    "CALL_HINT",
    "DEFAULT_SEARCH_LIMIT",
    "STILL_STARTING",
    "Detail",
    "render_overview",
    "render_search",
    "server_listing",
    "unknown_server",
    "with_access_note",
]

CALL_HINT = (
    "Call tools in execute_code as tools.<server>.<tool>(arg=value, ...) (keywords only); "
    "search_docs(query) shows their signatures."
)
STILL_STARTING = "Still starting:"
"""Begins the line naming the children an answer could not wait for (search_docs never waits)."""
_MAX_NAMES_PER_SERVER = 40  # past this the overview says how many more: search finds them
_MAX_ERROR_CHARS = 200
_MAX_FAILURE_CHARS = 400  # a failed child stays down until someone acts: its reason says what to do


def _one_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _state(server: CatalogServer) -> str:
    status = server.status
    if server.blocked is not None:
        return f"blocked: {_one_line(server.blocked, 400)}"
    if status.state is ChildState.FAILED:
        return f"failed: {_one_line(status.error or 'no error was reported', _MAX_FAILURE_CHARS)}"
    if status.state is ChildState.CONNECTING:
        return "connecting, its tools appear when it is ready"
    if status.state is ChildState.RECONNECTING:
        error = _one_line(status.error or "no error was reported")
        return f"reconnecting (attempt {status.attempt}), calls fail until it is back; last error: {error}"
    if status.state is ChildState.IDLE:
        if server.tool_count:
            return "idle, starts on first use"
        hint = f'search_docs(server="{server.identifier}") starts it and lists its tools'
        return f"idle, starts on first use: {hint}"
    count = server.tool_count
    return f"ready, {_counted(count, 'tool')}"


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_overview(catalog: Catalog, loaded: str | None = None) -> str:
    """Every server with its state and tool names, then how to call them; `loaded` (that the config
    was reloaded, and when) ends it."""
    servers = catalog.servers
    if not servers:
        return "\n".join(
            ["No child servers are configured: there are no tools to call.", *filter(None, [loaded])]
        )
    ready = sum(1 for s in servers if s.state is ChildState.READY)
    counts = f"{_counted(len(servers), 'server')} ({ready} ready), {_counted(len(catalog), 'tool')}"
    lines = [f"{counts}. {CALL_HINT}"]
    lines += _quarantine_note(catalog)
    for status in servers:
        line = f"{status.identifier} ({_state(status)})"
        names = [_named(entry) for entry in catalog.tools_of(status.identifier)]
        if names:
            shown = names[:_MAX_NAMES_PER_SERVER]
            more = len(names) - len(shown)
            line += ": " + ", ".join(shown) + (f", ... {more} more" if more else "")
        lines.append(line)
    lines += _resources_note([s for s in servers if s.resources])
    lines += _instructions_note([s for s in servers if s.instructions])
    lines += _starting_note(catalog)
    lines += [loaded] if loaded else []
    return "\n".join(lines)


def _instructions_note(servers: Sequence[CatalogServer]) -> list[str]:
    """A line naming the servers that gave usage instructions, and where to read them."""
    if not servers:
        return []
    names = ", ".join(s.identifier for s in servers)
    return [f'Usage instructions from {names}: search_docs(server="<name>") shows them.']


def _instructions(server: CatalogServer) -> list[str]:
    """The server's own instructions, under a line saying whose words they are, each of their lines
    indented as a tool's description is: no line a child wrote starts where the gateway's own lines
    do, so it cannot pass for them ("Instructions from the git server:", a note that a call was approved)."""
    if not server.instructions:
        return []
    lines = [f"  {line}" if line else "" for line in server.instructions.splitlines()]
    return [f"Instructions from the {server.identifier} server:", *lines]


def _resources_note(servers: Sequence[CatalogServer]) -> list[str]:
    """A line naming the servers that offer resources (data to read, such as files), and how to."""
    if not servers:
        return []
    names = ", ".join(s.identifier for s in servers)
    return [
        f"Resources (data to read, not tools) on {names}: resources.<server>.list() lists them and "
        "their URI templates, resources.<server>.read(uri) reads one."
    ]


def _quarantine_note(catalog: Catalog) -> list[str]:
    """A line on the tools held back for differing from the lockfile, if any: the model can tell the
    user why a tool they expect is missing. Only the count: a new tool's name is unreviewed text."""
    held = catalog.quarantined
    return [catalog.quarantine.overview(len(held))] if held and catalog.quarantine is not None else []


def _named(entry: CatalogEntry) -> str:
    return f"{entry.python_name} [{entry.access}]" if entry.access else entry.python_name


def with_access_note(text: str, entry: CatalogEntry) -> str:
    """`text` with the policy's note on its first line."""
    if not entry.access:
        return text
    first, newline, rest = text.partition("\n")
    return f"{first}  [{entry.access}]{newline}{rest}"


def _render_entries(catalog: Catalog, entries: Sequence[CatalogEntry], detail: Detail) -> list[str]:
    if detail == "names":
        return [with_access_note(entry.qualified, entry) for entry in entries]
    if detail == "full":
        docs = (with_access_note(full_doc(entry, catalog.observed(entry)), entry) for entry in entries)
        return "\n\n".join(docs).split("\n")
    return [with_access_note(signature(entry, observed=catalog.observed(entry)), entry) for entry in entries]


def unknown_server(catalog: Catalog, server: str) -> str:
    """That `server` is unknown, the close names, and the known ones."""
    known = ", ".join(s.identifier for s in catalog.servers) or "none are configured"
    close = catalog.suggest_servers(server)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    return f'Unknown server "{server}".{hint} Known servers: {known}.'


def _not_ready_note(catalog: Catalog, only: str | None) -> str | None:
    # Idle and reconnecting servers keep the tools they last listed: those are searched, and only
    # a server that is down is worth a note; one without tools is missing from the results.
    missing: list[str] = []
    down: list[str] = []
    for s in catalog.servers:
        if s.state is ChildState.READY or (only is not None and s.identifier != only):
            continue
        if s.state is ChildState.CONNECTING and not catalog.tools_of(s.identifier):
            continue  # named once, by `_starting_note`
        if not catalog.tools_of(s.identifier):
            missing.append(f"{s.identifier} ({_state(s)})")
        elif s.state is ChildState.RECONNECTING:
            down.append(f"{s.identifier} ({_state(s)})")
    notes = [
        f"{label}: " + "; ".join(items) + "."
        for label, items in (("Not in these results", missing), ("Down", down))
        if items
    ]
    notes += _starting_note(catalog, only)
    return "\n".join(notes) or None


def still_starting(catalog: Catalog) -> list[str]:
    """The children still starting, whose tools no answer holds yet."""
    return [
        s.identifier
        for s in catalog.servers
        if s.state is ChildState.CONNECTING and not catalog.tools_of(s.identifier)
    ]


def _starting_note(catalog: Catalog, only: str | None = None) -> list[str]:
    """One line naming the children still starting, whose tools no answer holds yet."""
    starting = [identifier for identifier in still_starting(catalog) if only is None or identifier == only]
    if not starting:
        return []
    them = "it" if len(starting) == 1 else "them"
    return [f"{STILL_STARTING} {', '.join(starting)}; the next search waits for {them}."]


def server_listing(
    catalog: Catalog, status: CatalogServer, limit: int, detail: Detail, *, call_hint: bool = True
) -> str:
    """One server's state, its first `limit` tools in `detail` and the names of the rest, how to
    call them (`call_hint`), and the server's own instructions."""
    entries = catalog.tools_of(status.identifier)
    lines = [f"{status.identifier} ({_state(status)})"]
    lines += _render_entries(catalog, entries[:limit], detail)
    rest = entries[limit:]
    if rest:
        lines.append(f"{len(rest)} more: " + ", ".join(entry.python_name for entry in rest))
    if entries and call_hint:
        lines.append(CALL_HINT)
    lines += _resources_note([status] if status.resources else [])
    lines += _instructions(status)
    return "\n".join(lines)


def _did_you_mean(catalog: Catalog, query: str) -> str | None:
    close = catalog.suggest(query)
    if close:
        return "Did you mean " + " or ".join(close) + "?"
    corrected = corrected_query(catalog, query)
    if corrected != query:
        return f'Did you mean "{corrected}"?'
    return None


def _servers_hint(catalog: Catalog) -> str:
    servers = catalog.servers
    if len(servers) > MAX_HINTED_SERVERS:
        return f"search_docs() lists the {len(servers)} servers"
    return "servers: " + ", ".join(s.identifier for s in servers)


def _no_results(catalog: Catalog, query: str, server: str | None) -> str:
    # The model wrote the query: an answer that repeats it spends its bytes on what it knows.
    where = f" on {server}" if server else ""
    lines = [f"No tool{where} matches."]
    hint = _did_you_mean(catalog, query)
    if hint:
        lines.append(hint)
    lines.append(
        "Try fewer or broader words"
        + (", drop the server filter" if server else "")
        + ", or call search_docs with an empty query for the overview of every server and tool."
    )
    return "\n".join(lines + _quarantine_note(catalog))


WEAK_HINTS = 3
"""Tools shown as the nearest when no tool fits: enough to correct a near miss, few enough to skim."""


def _weak_note(catalog: Catalog, query: str) -> str:
    hint = _did_you_mean(catalog, query)
    return (f"{hint} " if hint else "") + f"Try other words or a server name; {_servers_hint(catalog)}."


def render_search(
    catalog: Catalog,
    query: str,
    server: str | None = None,
    limit: int = DEFAULT_SEARCH_LIMIT,
    detail: Detail = "signatures",
    *,
    loaded: str | None = None,
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
) -> str:
    """search_docs's answer: the overview for an empty query, else the best `limit` tools in `detail`;
    `loaded` (that the config was reloaded, and when) ends the overview of every server. SearchRefused
    for a query past `max_query_chars` (`search.max_query_chars`) or a server name past the name cap."""
    check_search(query, server, max_query_chars)
    limit = max(limit, 1)
    status = catalog.server(server) if server is not None else None
    if server is not None and status is None:
        return unknown_server(catalog, server)
    query = query.strip()
    if not query:
        if status is None:
            return render_overview(catalog, loaded)
        return server_listing(catalog, status, limit, detail)
    only = status.identifier if status else None
    hits = search(catalog, query, only, limit)
    note = _not_ready_note(catalog, only)
    if not hits:
        text = _no_results(catalog, query, only)
        return f"{text}\n{note}" if note else text
    where = f" on {only}" if only else ""
    if hits[0].weak:  # nothing fits: say so first, and show the nearest few as hints only
        hits = hits[:WEAK_HINTS]
        unknown = f' (no server here knows "{hits[0].elsewhere}")' if hits[0].elsewhere else ""
        lines = [f"No tool{where} clearly fits{unknown}; the nearest:"]
        lines += _render_entries(catalog, [hit.entry for hit in hits], detail)
        lines.append(_weak_note(catalog, query))
    else:
        count = f"{len(hits)} tool{'' if len(hits) == 1 else 's'}"
        lines = [f"{count}{where}, best first:"]
        lines += _render_entries(catalog, [hit.entry for hit in hits], detail)
    return "\n".join([*lines, *([note] if note else [])])
