"""Why a tool name resolves to nothing, as the snippet reads it at run time and before it runs."""

from __future__ import annotations

from gateway.catalog._catalog import Catalog
from gateway.children import ChildState

__all__ = ["MAX_HINTED_SERVERS", "unknown_tool_message"]


MAX_HINTED_SERVERS = 8
"""Servers a hint names (a weak answer's, an unknown server's); past this many it points to the
overview, which names them all: a long list on every hint would cost more than the call it saves."""
_SEARCH_HINT = " Call search_docs to find tools."


def unknown_tool_message(catalog: Catalog, name: str) -> str:
    """Why `name` resolves to no tool: quarantined by the lockfile, its server is down, a did-you-mean,
    or no such server (naming those there are)."""
    if (quarantined := catalog.quarantine_refusal(name)) is not None:
        return quarantined
    server = name.partition(".")[0]
    status = catalog.server(server)
    if status is not None and status.blocked is not None:
        return f"server {server!r} is blocked: {status.blocked}"
    if status is not None and status.state is not ChildState.READY:
        reason = f": {status.status.error}" if status.status.error else ""
        state = "failed" if status.state is ChildState.FAILED else f"is {status.state}"
        return f"server {server!r} {state}{reason}; its tools cannot be called now"
    suggestions = catalog.suggest(name)
    if suggestions:
        return f"unknown tool {name!r}; did you mean {' or '.join(suggestions)}?{_SEARCH_HINT}"
    if status is None and "." in name:  # the server itself is unknown: name the ones there are
        servers = [known.identifier for known in catalog.servers]
        more = len(servers) - MAX_HINTED_SERVERS
        listed = ", ".join(servers[:MAX_HINTED_SERVERS]) + (f" and {more} more" if more > 0 else "")
        return f"unknown tool {name!r}: no server {server!r} (there are {listed or 'none'}).{_SEARCH_HINT}"
    return f"unknown tool {name!r}.{_SEARCH_HINT}"
