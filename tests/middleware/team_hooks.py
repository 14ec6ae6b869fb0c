"""Middleware a team might write, imported by the gateway under test as `tests.middleware.team_hooks:...`.

Each acts on one tool of the test servers only (tests/servers/ledger_server.py, tiny_server.py), so
that one config can list them all.
"""

from __future__ import annotations

from typing import Any

from gateway.middleware import Call, CallNext, Refused, Search, SearchEntry


async def rewrite_entries(call: Call, call_next: CallNext) -> Any:
    """Mark every ledger entry as coming through the gateway; `pad:` entries are stretched past the
    policy's `maxLength` (a middleware trying to send what the policy refuses)."""
    if call.tool != "ledger.append":
        return await call_next(call)
    entry = str(call.arguments.get("entry", ""))
    entry = entry + "." * 100 if entry.startswith("pad:") else f"{entry} (via gateway)"
    return await call_next(call.replace(arguments={**call.arguments, "entry": entry}))


async def require_ticket(call: Call, call_next: CallNext) -> Any:
    """Ledger notes need a ticket number."""
    if call.tool == "ledger.note" and not str(call.arguments.get("entry", "")).startswith("T-"):
        raise Refused("ledger notes need a ticket: start the entry with T-<number>")
    return await call_next(call)


async def crash_on_boom(call: Call, call_next: CallNext) -> Any:
    """A bug: echoing "boom" raises (with a detail the snippet must not see)."""
    if call.tool == "tiny.echo" and call.arguments.get("text") == "boom":
        raise RuntimeError("internal detail: connection string db://team")
    return await call_next(call)


class Shout:
    """Echoes come back upper-cased; search_docs does not show `tiny.env` and marks ledger.note."""

    async def __call__(self, call: Call, call_next: CallNext) -> Any:
        value = await call_next(call)
        if call.tool == "tiny.echo" and isinstance(value, dict) and isinstance(value.get("result"), str):
            return {"result": value["result"].upper()}
        return value

    async def on_search(self, entries: list[SearchEntry], search: Search) -> list[SearchEntry]:
        return [
            entry.replace(description=f"[needs a ticket] {entry.description}")
            if entry.tool == "ledger.note"
            else entry
            for entry in entries
            if entry.tool != "tiny.env"
        ]


shout = Shout()

not_callable = 42


def not_async(call: Call, call_next: CallNext) -> Any:
    return call_next(call)
