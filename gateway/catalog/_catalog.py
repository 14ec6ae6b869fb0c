"""An immutable snapshot of every child server's tools under Python names, with lookup and suggestions.

A new Catalog is built whenever a child's tools or state change; readers never see it mutate.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcp.types import Tool
from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog._naming import assign_identifiers, first_of_each_name, server_identifiers, to_identifier
from gateway.catalog._quarantine import Quarantine
from gateway.catalog._semantic import SemanticSearch
from gateway.catalog._shapes import ObservedShapes
from gateway.children import ChildState, ChildStatus
from gateway.shared import properties_of
from guest._precheck import MAX_NAME_CHARS

__all__ = ["Catalog", "CatalogEntry", "CatalogServer"]

_SUGGEST_CUTOFF = 0.6
_SAME_SERVER_BONUS = 0.05  # a correctly named server breaks ties toward its own tools


class CatalogEntry(BaseModel):
    """One child tool: its Python names for the model, its original names for the MCP call."""

    model_config = ConfigDict(frozen=True)

    server_id: str
    server_name: str
    tool_name: str
    python_name: str
    qualified: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    argument_names: dict[str, str] = Field(default_factory=dict[str, str])
    """Python parameter name -> the schema's property name, for every top-level property."""
    read_only: bool | None = None
    destructive: bool | None = None
    access: str | None = None
    """What the policy says of calls to it when they are not simply allowed; search_docs shows it."""

    @classmethod
    def from_tool(cls, server_id: str, server_name: str, python_name: str, tool: Tool) -> CatalogEntry:
        """Wrap an MCP Tool once its server and tool identifiers are settled."""
        names = list(properties_of(tool.input_schema))
        python_args = assign_identifiers(names, fallback="arg")
        hints = tool.annotations
        return cls(
            server_id=server_id,
            server_name=server_name,
            tool_name=tool.name,
            python_name=python_name,
            qualified=f"{server_id}.{python_name}",
            title=tool.title or (hints.title if hints else None),
            description=(tool.description or "").strip(),
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            argument_names={python_args[n]: n for n in names},
            read_only=hints.read_only_hint if hints else None,
            destructive=hints.destructive_hint if hints else None,
        )

    def wire_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments as the child expects them: Python parameter names back to property names."""
        return {self.argument_names.get(name, name): value for name, value in arguments.items()}


@dataclass(frozen=True, slots=True)
class CatalogServer:
    """A child server as the model sees it: its Python identifier, its status, its listed tools' count."""

    identifier: str
    status: ChildStatus
    tool_count: int = 0
    """The tools of it the catalog lists (hidden ones are not counted)."""
    blocked: str | None = None
    """Why none of its tools can be reached although it is up (a policy rule that must be fixed)."""
    resources: bool = False
    """It lists resources or resource templates, and the policy hides not all of them."""
    instructions: str | None = None
    """How to use the server, in its own words (its `instructions`, redacted and capped)."""

    @property
    def name(self) -> str:
        """The server's name in the config (`mcpServers`)."""
        return self.status.name

    @property
    def state(self) -> ChildState:
        return self.status.state


class Catalog:
    """Every child's tools, looked up by `server.tool` in Python or original spelling."""

    # __weakref__: derived data (the search index) is cached per catalog in weak maps.
    __slots__ = (
        "__weakref__",
        "_by_name",
        "_by_server",
        "_entries",
        "_held",
        "_held_names",
        "_origin",
        "_quarantine",
        "_semantic",
        "_servers",
        "_shapes",
    )

    def __init__(
        self,
        tools: Mapping[str, Sequence[Tool]] | None = None,
        statuses: Iterable[ChildStatus] = (),
        *,
        reviewed: Mapping[str, Iterable[str]] | None = None,
        semantic: SemanticSearch | None = None,
        shapes: ObservedShapes | None = None,
        instructions_chars: int = 0,
    ) -> None:
        """`reviewed` maps server names to the tool names the lockfile holds: those keep the Python
        names they had among themselves when it was written, and tools new since go around them, so
        that a new `fetch_page` cannot take the name of a reviewed `fetch-page` (and move it out of
        the policy rule written for it). `semantic` re-ranks search over it by meaning (the
        `semantic` extra); catalogs filtered from it keep it, and `shapes` (what calls of tools
        without an output schema returned) too. A server's instructions are kept up to
        `instructions_chars` characters."""
        tools = tools or {}
        given = {status.name: status for status in statuses}
        server_ids = server_identifiers([*tools, *given])
        entries: list[CatalogEntry] = []
        by_server: dict[str, tuple[CatalogEntry, ...]] = {}
        servers: dict[str, CatalogServer] = {}
        for server_name, server_id in sorted(server_ids.items(), key=lambda item: item[1]):
            listed = first_of_each_name(tools.get(server_name, ()))
            locked = assign_identifiers(reviewed.get(server_name, ())) if reviewed is not None else {}
            python_names = assign_identifiers((tool.name for tool in listed), claimed=locked)
            own = tuple(
                CatalogEntry.from_tool(server_id, server_name, python_names[t.name], t) for t in listed
            )
            entries.extend(own)
            by_server[server_id] = own
            status = given.get(server_name) or ChildStatus(server_name, "stdio", ChildState.READY)
            servers[server_id] = CatalogServer(
                server_id,
                status,
                len(own),
                resources=status.resources,
                instructions=_capped(status.instructions, instructions_chars),
            )
        self._entries = tuple(entries)
        self._by_server = by_server
        self._servers = servers
        self._by_name = self._index_names(self._entries)
        self._quarantine: Quarantine | None = None
        self._held: dict[str, tuple[CatalogEntry, ...]] = {}
        self._held_names: dict[str, CatalogEntry] = {}
        self._semantic = semantic
        self._shapes = shapes
        self._origin: Catalog | None = None

    @staticmethod
    def _index_names(entries: Sequence[CatalogEntry]) -> dict[str, CatalogEntry]:
        by_name = {entry.qualified: entry for entry in entries}
        # Original spellings resolve too, but never shadow another tool's Python name.
        for entry in entries:
            for server in (entry.server_id, entry.server_name):
                for tool in (entry.python_name, entry.tool_name):
                    by_name.setdefault(f"{server}.{tool}", entry)
        return by_name

    @property
    def entries(self) -> tuple[CatalogEntry, ...]:
        """Every tool, servers in identifier order, each server's tools in the order it listed them."""
        return self._entries

    @property
    def servers(self) -> tuple[CatalogServer, ...]:
        """Every server, ready or not, in identifier order."""
        return tuple(self._servers.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def filtered(
        self,
        keep: Callable[[CatalogEntry], bool],
        keep_server: Callable[[CatalogServer], bool] | None = None,
        *,
        blocked: Mapping[str, str] | None = None,
        access: Callable[[CatalogEntry], str | None] | None = None,
        quarantine: Quarantine | None = None,
        resources: Callable[[CatalogServer], bool] | None = None,
        describe: Callable[[CatalogEntry], str] | None = None,
    ) -> Catalog:
        """This catalog without the tools and servers the predicates reject, as if they never existed.

        `blocked` maps server identifiers to why their tools must stay unreachable: those servers keep
        no tools and say why, and offer no resources; `access` notes what the policy says of each tool
        that is kept; `resources` says whether a server's resources may be shown (not all hidden).
        `quarantine` holds back tools that differ from the lockfile: they are not listed, but the
        catalog knows them (those the predicates keep, so that it betrays no hidden tool) to say why.
        `describe` gives each kept tool its description (a middleware's `on_search` annotating it).
        A server keeps its instructions only if it is not blocked and none of its tools is rejected.
        """
        blocked = blocked or {}
        quarantine = quarantine or self._quarantine
        kept = Catalog.__new__(Catalog)
        servers = {k: s for k, s in self._servers.items() if keep_server is None or keep_server(s)}

        def held(entry: CatalogEntry) -> bool:
            return quarantine is not None and quarantine.holds(entry.server_name, entry.tool_name)

        by_server: dict[str, tuple[CatalogEntry, ...]] = {}
        kept._held = {}
        hiding: set[str] = set()  # servers some of whose tools the predicates reject
        for k in servers:
            own = () if k in blocked else (*self._by_server.get(k, ()), *self._held.get(k, ()))
            wanted = [entry for entry in own if keep(entry)]
            if len(wanted) < len(own):
                hiding.add(k)
            kept._held[k] = tuple(entry for entry in wanted if held(entry))
            by_server[k] = tuple(_noted(entry, access, describe) for entry in wanted if not held(entry))
        kept._by_server = by_server
        kept._entries = tuple(entry for own in kept._by_server.values() for entry in own)
        # Counts too: search_docs shows them, and "3 tools" where 4 are listed would betray a hidden one.
        kept._servers = {
            k: replace(
                s,
                tool_count=len(kept._by_server[k]),
                blocked=blocked.get(k),
                resources=s.resources and k not in blocked and (resources is None or resources(s)),
                # A server's own words may name any of its tools: shown only when none is hidden.
                instructions=None if k in blocked or k in hiding else s.instructions,
            )
            for k, s in servers.items()
        }
        kept._by_name = self._index_names(kept._entries)
        kept._quarantine = quarantine
        kept._held_names = self._index_names([entry for own in kept._held.values() for entry in own])
        kept._semantic = self._semantic
        kept._shapes = self._shapes
        kept._origin = None
        return kept

    def for_caller(self, caller: str) -> Catalog:
        """This catalog as the authenticated `caller` sees it: the same tools, with the result shapes
        its own calls taught (`ObservedShapes.for_caller`)."""
        if self._shapes is None:
            return self
        view = copy.copy(self)
        view._shapes = self._shapes.for_caller(caller)
        view._origin = self.origin
        return view

    @property
    def origin(self) -> Catalog:
        """The catalog this is a caller's view of, else itself: what a cache built per catalog keys on."""
        return self._origin or self

    @property
    def semantic(self) -> SemanticSearch | None:
        """The embedding model that re-ranks search over this catalog, if any (`search.semantic`)."""
        return self._semantic

    @property
    def shapes(self) -> ObservedShapes | None:
        """The shapes of what tools without an output schema returned, if they are kept."""
        return self._shapes

    def observed(self, entry: CatalogEntry) -> dict[str, Any] | None:
        """The shape of what calls of `entry` returned, if it declares no output schema and was called."""
        return self._shapes.shape_of(entry) if self._shapes is not None else None

    @property
    def quarantine(self) -> Quarantine | None:
        """The lockfile's quarantine this catalog was filtered by, if any."""
        return self._quarantine

    @property
    def quarantined(self) -> tuple[CatalogEntry, ...]:
        """The tools held back because they differ from the lockfile (only those it would list)."""
        return tuple(entry for own in self._held.values() for entry in own)

    def quarantine_refusal(self, name: str) -> str | None:
        """Why `name` cannot be called if it is a quarantined tool (any spelling `get` takes), else None."""
        name = name.strip()
        found = self._held_names.get(name) or self._held_names.get(name.removeprefix("tools."))
        if found is None or self._quarantine is None:
            return None
        return self._quarantine.refusal(found.server_name, found.tool_name, found.qualified)

    def get(self, name: str) -> CatalogEntry | None:
        """The tool called `name` ("server.tool", Python or original spelling, optional `tools.` prefix)."""
        name = name.strip()
        found = self._by_name.get(name)
        if found is None and name.startswith("tools."):
            found = self._by_name.get(name.removeprefix("tools."))
        return found

    def server(self, name: str) -> CatalogServer | None:
        """A server by identifier or original name."""
        found = self._servers.get(name)
        if found is None:
            found = next((s for s in self._servers.values() if s.name == name), None)
        return found

    def tools_of(self, server: str) -> tuple[CatalogEntry, ...]:
        """One server's tools (by identifier or original name); empty for an unknown server."""
        status = self.server(server)
        return self._by_server.get(status.identifier, ()) if status else ()

    def name_collisions(self, server: str) -> list[tuple[CatalogEntry, ...]]:
        """One server's tools whose names share a Python name (`drop-all`, `drop_all`), each such group
        in listing order: which of them gets the bare name and which a `_2` depends on what it lists."""
        groups: dict[str, list[CatalogEntry]] = {}
        for entry in self.tools_of(server):
            groups.setdefault(to_identifier(entry.tool_name), []).append(entry)
        return [tuple(group) for group in groups.values() if len(group) > 1]

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Up to `limit` qualified names close to `name`, which may be "server.tool" or a tool alone;
        none for a name past MAX_NAME_CHARS, which names no tool (and costs each comparison its length)."""
        wanted = name.strip().removeprefix("tools.").lower()
        if len(wanted) > MAX_NAME_CHARS:
            return []
        server_part, _, tool_part = wanted.rpartition(".")
        server = self.server(server_part) if server_part else None
        scored: list[tuple[float, str]] = []
        for entry in self._entries:
            score = max(
                _ratio(wanted, entry.qualified.lower()),
                _ratio(tool_part, entry.python_name.lower()),
                _ratio(tool_part, entry.tool_name.lower()),
            )
            # A correctly named server breaks ties toward its own tools.
            if server is not None and server.identifier == entry.server_id:
                score += _SAME_SERVER_BONUS
            if score >= _SUGGEST_CUTOFF:
                scored.append((score, entry.qualified))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [qualified for _, qualified in scored[:limit]]

    def suggest_servers(self, name: str, limit: int = 3) -> list[str]:
        """Up to `limit` server identifiers close to `name`; none for a name past MAX_NAME_CHARS."""
        if len(name) > MAX_NAME_CHARS:
            return []
        names = {s.identifier: s.identifier for s in self._servers.values()}
        names.update({s.name: s.identifier for s in self._servers.values()})
        close = difflib.get_close_matches(name.strip(), list(names), n=limit * 2, cutoff=_SUGGEST_CUTOFF)
        return list(dict.fromkeys(names[c] for c in close))[:limit]


def _noted(
    entry: CatalogEntry,
    access: Callable[[CatalogEntry], str | None] | None,
    describe: Callable[[CatalogEntry], str] | None = None,
) -> CatalogEntry:
    note = access(entry) if access is not None else None
    description = describe(entry) if describe is not None else entry.description
    if note == entry.access and description == entry.description:
        return entry
    return entry.model_copy(update={"access": note, "description": description})


def _capped(text: str | None, limit: int) -> str | None:
    """`text` without blank runs, cut to `limit` characters (saying where the cut is); None if empty."""
    if not text or limit <= 0:
        return None
    lines = [line.rstrip() for line in text.strip().splitlines()]
    kept = "\n".join(line for i, line in enumerate(lines) if line or (i and lines[i - 1]))
    if len(kept) <= limit:
        return kept
    return kept[:limit].rstrip() + f" ... (cut at {limit} characters: search.server_instructions_chars)"


def _ratio(a: str, b: str) -> float:
    """How alike `a` and `b` are (0..1); 0 when they cannot reach a suggestion at all, without the
    comparison, whose cost grows with the product of their lengths."""
    if not a or not b or 2 * min(len(a), len(b)) / (len(a) + len(b)) < _SUGGEST_CUTOFF - _SAME_SERVER_BONUS:
        return 0.0
    return difflib.SequenceMatcher(None, a, b).ratio()
