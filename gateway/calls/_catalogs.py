"""The catalog each policy sees, rebuilt when the children change, and the exposed tools over it."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread

from gateway.auth import Identity
from gateway.calls._exposed import ExposedTool, Exposure, expose_tools
from gateway.catalog import Catalog, CatalogServer, ObservedShapes, ShapeStore, docs
from gateway.catalog.docs import Detail, SemanticSearch
from gateway.catalog.lockfile import CatalogLock, Quarantine
from gateway.children import ChildPool, ChildState
from gateway.config import GatewayConfig
from gateway.middleware import Chain, Search, SearchEntry
from gateway.policy import Policy

__all__ = ["Catalogs", "searched"]

log = logging.getLogger("gateway")

SEARCH_THREADS = 2
"""Searches answered at once, each on a worker thread: the event loop never waits on one, and a
burst of heavy ones queues here instead of taking every worker thread."""


class Catalogs:
    """Per-policy catalogs over the pool: a cache keyed on the children's state, the servers a policy
    rule blocks, the lockfile's quarantine, and the exposure of `expose`'s tools."""

    def __init__(
        self,
        pool: ChildPool,
        config: GatewayConfig,
        policy: Policy,
        lock: CatalogLock | None,
        semantic: SemanticSearch | None,
        shapes: ShapeStore | None,
    ) -> None:
        self._pool = pool
        self._config = config
        self._policy = policy  # the policy of a caller no role names
        self._lock = lock
        self._semantic = semantic
        self._shapes = ObservedShapes(shapes)  # of what tools without an output schema returned
        self._key: tuple[Any, ...] | None = None
        self._everything = Catalog()  # before the policy filtered it
        self._by_policy: dict[Policy, Catalog] = {}  # as each caller's policy filters it
        self._quarantine: Quarantine | None = None
        self._blocked: dict[str, str] = {}
        self._exposure = Exposure()
        self._exposure_of: Catalog | None = None  # the catalog `_exposure` was computed from
        self._unlisted: dict[str, str] = {}  # expose entries logged as not listed, with the reason
        self._search_threads = anyio.CapacityLimiter(SEARCH_THREADS)
        self._named_starting: set[str] = set()  # children an answer named as still starting

    @property
    def lock(self) -> CatalogLock | None:
        """The lockfile in force, None without one."""
        return self._lock

    def search_wait(self) -> float:
        """How long a search, or a look at the exposed tools, waits for children still starting."""
        return min(self._config.search.wait_seconds, self._config.startup_timeout_seconds)

    def reconfigure(self, config: GatewayConfig, policy: Policy, lock: CatalogLock | None) -> None:
        """Build from `config`, `policy` and `lock` from the next look on."""
        self._config, self._policy, self._lock = config, policy, lock
        self._key = None

    def catalog(self, policy: Policy | None = None, identity: Identity | None = None) -> Catalog:
        """What the model may see under `policy` (by default, the policy of a caller no role names):
        the children's tools less the hidden ones, rebuilt on any change; for an authenticated
        `identity`, with the result shapes only its own calls taught.

        A server named by a policy rule (of the policy or of a role) that matches none of its tools
        keeps no tools at all until the rule is fixed: a typo must never leave a tool more reachable
        than the team wrote. With a lockfile, tools new or changed since it was written are
        quarantined (`catalog/_quarantine.py`).
        """
        policy = policy or self._policy
        statuses = self._pool.statuses()
        key = tuple(statuses)  # whole snapshots: a tools/list_changed bumps `tools_version`
        if key != self._key:
            tools = self._pool.tools()
            reviewed = self._lock.lock.servers if self._lock else None
            search = self._config.search
            self._everything = Catalog(
                tools,
                statuses,
                reviewed=reviewed,
                semantic=self._semantic,
                shapes=self._shapes if search.observed_shapes else None,
                instructions_chars=search.server_instructions_chars,
            )
            self._quarantine = self._lock.quarantine(tools, self._pool.names) if self._lock else None
            blocked = self._policy.unmatched(self._everything)
            for server, reason in blocked.items():
                if self._blocked.get(server) != reason:
                    log.error("a policy rule blocks a server", extra={"server": server, "reason": reason})
            self._blocked = blocked
            self._by_policy = {}
            self._key = key
        catalog = self._by_policy.get(policy)
        if catalog is None:
            catalog = self._by_policy[policy] = self._everything.filtered(
                policy.visible,
                policy.server_visible,
                blocked=self._blocked,
                access=policy.access_note,
                quarantine=self._quarantine,
                resources=policy.resources_visible,
            )
        return catalog if identity is None else catalog.for_caller(str(identity.owner))

    async def changed(self, seen: Catalog) -> Catalog:
        """Wait until the catalog the model sees is no longer `seen` (a child came up, went down or
        changed its tools), and return the new one."""
        while True:
            statuses = self._pool.statuses()
            current = self.catalog()  # no checkpoint between the two: they describe the same moment
            if current is not seen:
                return current
            await self._pool.wait_changed(statuses)

    def exposed(self) -> Exposure:
        """The tools `expose` lists that the model may call directly, for the current catalog."""
        catalog = self.catalog()
        if catalog is not self._exposure_of:
            self._exposure = expose_tools(
                self._config.expose,
                catalog,
                self._policy,
                everything=lambda: Catalog(self._pool.tools(), self._pool.statuses()),
                listed=self._pool.tools(),
            )
            self._exposure_of = catalog
            self._log_unlisted(self._exposure)
        return self._exposure

    def _log_unlisted(self, exposure: Exposure) -> None:
        """Say once why an `expose` entry is not listed, when the config must change for it to be."""
        for name, unlisted in exposure.unlisted.items():
            if unlisted.lasting and self._unlisted.get(name) != unlisted.reason:
                extra = {"expose": name, "reason": unlisted.reason}
                log.warning("an exposed tool is not listed", extra=extra)
                self._unlisted[name] = unlisted.reason
        for name in [name for name in self._unlisted if name not in exposure.unlisted]:
            del self._unlisted[name]  # listed now: a later problem is news again

    def _exposed_servers(self, state: ChildState) -> list[str]:
        """The config names of the children in `state` that `expose` names a tool of."""
        catalog = self.catalog()
        servers = (catalog.server(name.partition(".")[0]) for name in self._config.expose)
        return list(dict.fromkeys(s.name for s in servers if s is not None and s.state is state))

    def start_exposed_servers(self) -> None:
        """Start the lazy children of exposed tools once, so that tools/list can show them (they stay
        listed while the child idles, and a call starts it again)."""
        for name in self._exposed_servers(ChildState.IDLE):
            self._pool.start(name)

    async def settled_exposure(self) -> Exposure:
        """The exposed tools, once their children still starting have had up to `search_wait` to list
        their tools (as search_docs gives them): a client listing tools once, at start, finds them."""
        with anyio.move_on_after(self.search_wait()):
            await self._pool.wait_children(self._exposed_servers(ChildState.CONNECTING))
        return self.exposed()

    async def exposed_tool(self, name: str) -> ExposedTool | None:
        """The exposed tool listed as `name`; while children are still starting, once they have."""
        found = self.exposed().get(name)
        if found is None and self._config.expose:
            found = (await self.settled_exposure()).get(name)
        return found

    async def search(
        self,
        policy: Policy,
        query: str,
        server: str | None,
        limit: int,
        detail: Detail,
        identity: Identity | None,
        middleware: Chain,
        loaded: str | None,
    ) -> str:
        """The search_docs text under `policy`, naming the children still starting (a search naming one,
        a query no ready child's tool fits, and any search after an answer that named them, waits for
        them, `search_wait`). SearchRefused for a query past `search.max_query_chars` (or a server name
        past the name cap), before any work is spent on it."""
        max_query_chars = self._config.search.max_query_chars
        docs.check_search(query, server, max_query_chars)
        catalog = self.catalog(policy, identity)
        named = catalog.server(server) if server is not None else None
        if named is not None:
            self._pool.start(named.name)  # a lazy child starts when a search names it
            with anyio.move_on_after(self.search_wait()):
                await self._pool.wait_child(named.name)
            catalog = self.catalog(policy, identity)
        elif server is None and (needed := await self._needed_starting(catalog, query)):
            log.info("a search waits for the children still starting", extra={"children": needed})
            with anyio.move_on_after(self.search_wait()):
                await self._pool.wait_children(needed)
            catalog = self.catalog(policy, identity)
        if server is None or named is not None:  # the answer names these, saying the next search waits
            self._named_starting.update(_starting(catalog, named))
        if middleware.searches:
            search = Search(query, server, identity.principal if identity else None, policy.roles)
            catalog = await searched(middleware, catalog, search)
        return await anyio.to_thread.run_sync(
            self._render, catalog, query, server, limit, detail, loaded, limiter=self._search_threads
        )

    async def _needed_starting(self, catalog: Catalog, query: str) -> list[str]:
        """The children still starting that this search waits for (their names): those an earlier
        answer named as starting, which said the next search waits for them; or, for a query no ready
        child's tool fits, all of them (the tool may be theirs). The first answer, an overview or a
        query a ready child's tool fits, waits for none."""
        starting = _starting(catalog)
        if not starting:
            return []
        if not self._named_starting.isdisjoint(starting):
            return [name for name in starting if name in self._named_starting]
        if query.strip() and not await anyio.to_thread.run_sync(
            docs.fits, catalog, query, limiter=self._search_threads
        ):
            return starting
        return []

    def _render(
        self, catalog: Catalog, query: str, server: str | None, limit: int, detail: Detail, loaded: str | None
    ) -> str:
        max_query_chars = self._config.search.max_query_chars
        return docs.render_search(
            catalog, query, server, limit, detail, loaded=loaded, max_query_chars=max_query_chars
        )

    async def load_semantic(self, semantic: SemanticSearch, scope: anyio.CancelScope) -> None:
        """Load the search model off the event loop (or build it on a first run), then embed the tools
        the first searches will see, once the children have listed them. Searches are lexical until then."""
        with scope:
            if await anyio.to_thread.run_sync(semantic.load, abandon_on_cancel=True) is None:
                return  # logged by `load`
            await self._pool.wait_ready(timeout=self._config.startup_timeout_seconds)
            await anyio.to_thread.run_sync(docs.warm_search, self.catalog(), abandon_on_cancel=True)


def _starting(catalog: Catalog, only: CatalogServer | None = None) -> list[str]:
    """The names of the children still starting (of `only`, if given), whose tools no answer holds yet."""
    starting = set(docs.still_starting(catalog))
    return [
        server.name
        for server in catalog.servers
        if server.identifier in starting and (only is None or server.identifier == only.identifier)
    ]


async def searched(middleware: Chain, catalog: Catalog, search: Search) -> Catalog:
    """`catalog` as the middleware's on_search hooks let search_docs show it: filtered, annotated."""
    entries = [SearchEntry(entry.qualified, entry.server_name, entry.description) for entry in catalog]
    kept = {entry.tool: entry.description for entry in await middleware.on_search(entries, search)}
    return catalog.filtered(
        lambda entry: entry.qualified in kept,
        blocked={server.identifier: server.blocked for server in catalog.servers if server.blocked},
        access=lambda entry: entry.access,
        describe=lambda entry: kept[entry.qualified],
    )
