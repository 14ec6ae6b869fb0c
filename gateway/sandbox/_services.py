"""The seam between the sandbox and whoever serves its snippet: `HostServices`, a protocol it owns,
the bounds on what a snippet asks of it, and what a cancelled execution reports."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from gateway.errors import ExecutionCancelled

__all__ = [
    "MAX_DOCS_ARGS_BYTES",
    "MAX_DOCS_QUERIES",
    "MAX_URI_CHARS",
    "HostServices",
    "ToolCaller",
    "ToolsOnly",
    "cancelled_error",
]

MAX_DOCS_ARGS_BYTES = 65_536
"""A question's JSON, at most: room for the longest query `search.max_query_chars` allows (4,000
characters), however escaped; the catalog then refuses a query past the configured cap by name."""
MAX_DOCS_QUERIES = 200
"""search(), help() and dir() on tools per execution: each costs the host a catalog search, so a
loop of them must end; no real snippet needs this many."""
MAX_URI_CHARS = 2_048
"""The longest URI the host takes (a resource read's, a shown Blob's): a longer one is a mistake, or
costs the child."""

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Calls a namespaced tool with JSON arguments and returns a JSON-able value; raises ToolCallError."""


class HostServices(Protocol):
    """What a snippet reaches outside the sandbox: tools, their admission, resources, the catalog.

    The tool and resource methods run on the event loop, `read_docs` on the run's worker thread.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a namespaced tool with JSON arguments; a JSON-able value, or ToolCallError."""
        ...

    async def admit(self, name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        """Admit a call (every check before the child is reached, approval included) and return what
        makes it; ToolCallError for a refusal. Calls run side by side are admitted in order."""
        ...

    async def read_resources(self, request: dict[str, Any]) -> Any:
        """List a server's resources or read one (`{"server", "op": "list" | "read", "uri"}`); a
        JSON-able answer, or ToolCallError."""
        ...

    def read_docs(self, service: str, payload: dict[str, Any]) -> Any:
        """Answer `@search`, `@docs` or `@precheck` from the catalog; a JSON-able value, or ValueError
        with a message for the snippet when the question is malformed."""
        ...


@dataclass(frozen=True)
class ToolsOnly:
    """Host services of one tool-calling function, with no catalog or resources behind it (an embedding)."""

    caller: ToolCaller

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call the tool through the one function."""
        return await self.caller(name, arguments)

    async def admit(self, name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        """Nothing to check before the call: return what makes it."""
        return partial(self.caller, name, arguments)

    async def read_resources(self, request: dict[str, Any]) -> Any:
        """Never reached: the sandbox refuses resource reads without a catalog (`serves_catalog`)."""
        raise NotImplementedError

    def read_docs(self, service: str, payload: dict[str, Any]) -> Any:
        """Never reached: the sandbox refuses catalog questions without a catalog (`serves_catalog`)."""
        raise NotImplementedError


def serves_catalog(services: HostServices | None) -> bool:
    """Whether `services` answer questions about the catalog and resource reads."""
    return services is not None and not isinstance(services, ToolsOnly)


def cancelled_error() -> ExecutionCancelled:
    """What an execution the client cancelled reports."""
    return ExecutionCancelled("the execution was cancelled by the client")
