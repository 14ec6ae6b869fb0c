"""What a middleware sees and returns: the call, the refusal, the chain's type, and the search hook."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Call", "CallNext", "Middleware", "Refused", "Search", "SearchEntry", "SearchHook"]


@dataclass(frozen=True)
class Call:
    """One child tool call as a middleware sees it, after the gateway's checks (steps 0-6) passed.

    `arguments` are the child's own (wire) names and values, as checked; a middleware gets a copy of
    its own, so changing it in place changes nothing until it is passed to `call_next`.
    """

    tool: str  # "server.tool", as the snippet calls it
    server: str  # the server's name in the config (`mcpServers`)
    arguments: dict[str, Any]
    principal: str | None  # the authenticated HTTP caller, None on stdio
    roles: tuple[str, ...]  # the `policy.roles` that caller has
    execution_id: str
    # Who vouched for the principal: a JWT's `iss`, or `codemode-gateway:tokens` for a static token.
    # A principal is one caller only together with it: a JWT's `sub` may equal a static token's name.
    issuer: str | None = None

    def replace(self, **changes: Any) -> Call:
        """This call with `changes`; only `arguments` may differ in what reaches `call_next`."""
        return dataclasses.replace(self, **changes)


class Refused(Exception):
    """Raised by a middleware to refuse a call: the snippet gets its message as a ToolError."""


CallNext = Callable[[Call], Awaitable[Any]]
"""The rest of the chain: the next middleware, and in the end the child; awaits the call's value."""


class Middleware(Protocol):
    """`async def middleware(call, call_next) -> value`: the value is what the snippet receives."""

    def __call__(self, call: Call, call_next: CallNext, /) -> Awaitable[Any]: ...


@dataclass(frozen=True)
class SearchEntry:
    """One tool as search_docs would show it: drop it to hide it, `replace` its description to annotate."""

    tool: str  # "server.tool"
    server: str  # the server's name in the config
    description: str

    def replace(self, **changes: Any) -> SearchEntry:
        """This entry with `changes` (a new `description`; the other fields name the tool)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Search:
    """Who searches, and for what (search_docs' arguments)."""

    query: str
    server: str | None
    principal: str | None
    roles: tuple[str, ...]


class SearchHook(Protocol):
    """`async def on_search(entries, search) -> entries`, an attribute of a middleware: the tools
    search_docs may show, each as its entry; the entries returned are shown (a subset, annotated)."""

    def __call__(self, entries: list[SearchEntry], search: Search, /) -> Awaitable[list[SearchEntry]]: ...
