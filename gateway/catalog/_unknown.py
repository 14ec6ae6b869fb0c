"""Why a tool name resolves to nothing, as the snippet reads it at run time and before it runs."""

from __future__ import annotations

from gateway.catalog._catalog import Catalog
from gateway.children import ChildState

__all__ = ["unknown_tool_message"]


def unknown_tool_message(catalog: Catalog, name: str) -> str:
    """Why `name` resolves to no tool: quarantined by the lockfile, its server is down, or a did-you-mean."""
    if (quarantined := catalog.quarantine_refusal(name)) is not None:
        return quarantined
    server = name.partition(".")[0]
    status = catalog.server(server)
    if status is not None and status.blocked is not None:
        return f"server {server!r} is blocked: {status.blocked}"
    if status is not None and status.state is not ChildState.READY:
        reason = f": {status.status.error}" if status.status.error else ""
        return f"server {server!r} is {status.state}{reason}; its tools cannot be called now"
    suggestions = catalog.suggest(name)
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else "."
    return f"unknown tool {name!r}{hint} Call search_docs to find tools."
