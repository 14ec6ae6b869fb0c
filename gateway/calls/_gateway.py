"""The gateway: the child pool, the catalog over it, the sandbox, and the tool calls between them."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Self, overload

import anyio
from anyio import AsyncContextManagerMixin
from mcp import types

from gateway.audit import AuditLog, check_audit_log
from gateway.auth import Identity, still_configured
from gateway.calls._approvals import Approvals, Inline
from gateway.calls._catalogs import Catalogs
from gateway.calls._executions import Executions
from gateway.calls._exposed import ExposedCalls, ExposedTool, Exposure
from gateway.calls._pipeline import ExecutionStart, Progress, caller_of
from gateway.calls._pool import child_pool, child_settings, gateway_secrets
from gateway.calls._resources import ResourceReads
from gateway.calls._resume import (
    ApprovalNeeded,
    SpentStates,
)
from gateway.calls._sandbox_loader import SandboxLoader
from gateway.calls._tool_calls import ToolCalls
from gateway.catalog import Catalog
from gateway.catalog.docs import (
    DEFAULT_SEARCH_LIMIT,
    Detail,
    semantic_search,
)
from gateway.catalog.lockfile import CatalogLock
from gateway.children import ChildPool, ChildState, PoolChanges
from gateway.config import GatewayConfig
from gateway.errors import (
    ExecutionFailed,
)
from gateway.middleware import Chain
from gateway.policy import Policies, Policy
from gateway.sandbox import cancelled_error
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from gateway.shared import Redactor
from gateway.state import Stores
from gateway.telemetry import Telemetry

if TYPE_CHECKING:  # the sandbox's runtime loads with the first sandbox, not with the gateway
    from gateway.sandbox import Sandbox

__all__ = ["Gateway"]

INLINE = Inline()

log = logging.getLogger("gateway")


class Gateway(AsyncContextManagerMixin):
    """Entering starts the children and loads the sandbox in the background, then returns at once."""

    def __init__(self, config: GatewayConfig, telemetry: Telemetry | None = None) -> None:
        """`telemetry`: where its metrics and spans go (a registry of its own, the global tracer)."""
        self.config: GatewayConfig = config
        if config.audit is not None:
            # Opened only as the gateway starts (a stdio one answers its handshake first), so checked
            # now: a log that cannot be opened is refused with the rest of the config.
            check_audit_log(config.audit, config.base_dir)
        self.telemetry = telemetry or Telemetry()
        # What replicas share with `state` set (spent approvals, rate windows, shapes), else this process.
        self.stores = Stores.of(config.state)
        self.policies = Policies(config.policy, windows=self.stores.rates)
        self.policy = self.policies.base  # the policy of a caller no role names
        # The team's middleware (imported as the config was validated); each execution takes the current one.
        self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.redactor = Redactor(gateway_secrets(config))
        self._audit: AuditLog | None = None
        self._pool = child_pool(config, self.redactor)
        self.telemetry.metrics.watch_children(self._pool.statuses, ChildState)
        self._sandboxes = SandboxLoader()
        self.telemetry.metrics.watch_sandbox(self._sandboxes.slot_usage)
        # ConfigError for `search.semantic` "on" without the model's runtime, or a malformed lockfile
        # (read once).
        self._semantic = semantic_search(config.search.semantic)
        lock = CatalogLock.beside(config.config_file)
        self._catalogs = Catalogs(self._pool, config, self.policy, lock, self._semantic, self.stores.shapes)
        self._spent_states = SpentStates(config.approvals.ttl_seconds, self.stores.approvals)
        self._use_audit(None)
        self.loaded_at = datetime.now(UTC)  # when the config in force was loaded (search_docs says)
        self.reloads = 0  # reloads applied since start: each changed the config in force

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncGenerator[Self]:
        async with AsyncExitStack() as stack:  # unwinds whatever was entered if a later step fails
            if self.config.audit is not None:
                self._audit = AuditLog.from_config(self.config.audit, self.config.base_dir, self.redactor)
                stack.callback(self._audit.close)
                self._use_audit(self._audit)
            await stack.enter_async_context(self.stores.serving())
            await stack.enter_async_context(self._pool)
            self._catalogs.start_exposed_servers()
            stack.callback(self._sandboxes.close)
            task_group = await stack.enter_async_context(anyio.create_task_group())
            task_group.start_soon(self._sandboxes.load, self.config.sandbox)
            if self._semantic is not None:
                loading = anyio.CancelScope()
                stack.callback(self._semantic.close)
                stack.callback(loading.cancel)  # a gateway leaving does not wait for the model
                task_group.start_soon(self._catalogs.load_semantic, self._semantic, loading)
            yield self

    def _use_audit(self, audit: AuditLog | None) -> None:
        self._tool_calls = ToolCalls(self._pool, self.redactor, audit, self.catalog, self.telemetry)
        self._resources = ResourceReads(self._pool, self.redactor, audit, self.telemetry)
        self._executions = Executions(
            self.config,
            self._tool_calls,
            self._resources,
            self.redactor,
            self.telemetry,
            audit,
            self._spent_states,
        )
        self._exposed_calls = ExposedCalls(self._tool_calls, self._spent_states, self.telemetry)

    @property
    def pool(self) -> ChildPool:
        return self._pool

    @property
    def audit(self) -> AuditLog | None:
        """The audit log, while the gateway is entered and the config has an `audit` section."""
        return self._audit

    def apply_config(self, config: GatewayConfig, lock: CatalogLock | None) -> PoolChanges:
        """Serve `config` from now on (a reload: validated, and holding only what applies live; see
        `gateway/reload/`). New executions get its policy and catalog; an execution in flight keeps those it
        started with (its Execution holds them). Children are started, stopped or replaced one by one."""
        self.redactor.add(gateway_secrets(config))  # first: a new child's secret is never shown
        if config.policy != self.config.policy:
            shared = self.stores.rates if self.stores.shared is not None else None  # local ones start over
            self.policies = Policies(config.policy, windows=shared)
            self.policy = self.policies.base
        if _middleware_of(config) != _middleware_of(self.config):
            self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.config = self._executions.config = config
        self._catalogs.reconfigure(config, self.policy, lock)  # rebuilt at the next look
        changes = self._pool.reconfigure(
            config.mcp_servers, child_settings(config), config.unavailable_servers
        )
        self._catalogs.start_exposed_servers()
        return changes

    def count_reload(self) -> int:
        """Note that a reload changed the config in force (search_docs's overview says so); its number."""
        self.loaded_at = datetime.now(UTC)
        self.reloads += 1
        return self.reloads

    @property
    def catalog_lock(self) -> CatalogLock | None:
        """The lockfile in force (read at start or by the last reload applied), None without one."""
        return self._catalogs.lock

    def swap_sandbox(self, sandbox: Sandbox) -> Sandbox | None:
        """Run new executions in `sandbox` (built for a reload's new limits); returns the one it
        replaces, which the executions already in it go on using until they end."""
        return self._sandboxes.swap(sandbox)

    def loaded_note(self) -> str | None:
        """That the config was reloaded, and when, for search_docs's overview; None before any reload
        (the config the gateway started with tells the model nothing)."""
        if not self.reloads:
            return None
        stamp = self.loaded_at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return f"Config reloaded {stamp} (reload {self.reloads}): tools may differ from earlier searches."

    def catalog(self, policy: Policy | None = None, identity: Identity | None = None) -> Catalog:
        """What the model may see under `policy` (by default, the policy of a caller no role names); for
        an authenticated `identity`, with the result shapes only its own calls taught."""
        return self._catalogs.catalog(policy, identity)

    async def catalog_changed(self, seen: Catalog) -> Catalog:
        """Wait until the catalog the model sees is no longer `seen`, and return the new one."""
        return await self._catalogs.changed(seen)

    def exposed(self) -> Exposure:
        """The tools `expose` lists that the model may call directly, for the current catalog."""
        return self._catalogs.exposed()

    async def settled_exposure(self) -> Exposure:
        """The exposed tools, once children still starting have had a moment to list their tools."""
        return await self._catalogs.settled_exposure()

    async def exposed_tool(self, name: str) -> ExposedTool | None:
        """The exposed tool listed as `name`; while children are still starting, once they have."""
        return await self._catalogs.exposed_tool(name)

    @overload
    async def call_exposed(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        approvals: Inline = ...,
        identity: Identity | None = None,
        client: types.Implementation | None = None,
    ) -> types.CallToolResult: ...
    @overload
    async def call_exposed(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        approvals: Approvals,
        identity: Identity | None = None,
        client: types.Implementation | None = None,
    ) -> types.CallToolResult | ApprovalNeeded: ...
    async def call_exposed(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        approvals: Approvals = INLINE,
        identity: Identity | None = None,
        client: types.Implementation | None = None,
    ) -> types.CallToolResult | ApprovalNeeded:
        """Call an exposed tool for the client: the child's result, redacted; or the refusal, or in
        rounds ApprovalNeeded (see `ExposedCalls.call`)."""
        start = self._start(identity, client)
        timeout = self.config.sandbox.tool_call_timeout_seconds
        return await self._exposed_calls.call(tool, arguments, approvals, start, timeout)

    def execute_code_annotations(self) -> tuple[bool, bool]:
        """execute_code's (readOnlyHint, destructiveHint): what the callable tools can do."""
        complete = all(s.state is not ChildState.CONNECTING for s in self._pool.statuses())
        return self.policy.execute_code_annotations(self.catalog(), complete=complete)

    async def sandbox(self) -> Sandbox:
        """The loaded sandbox, waiting for the background load if it is still running."""
        return await self._sandboxes.get()

    def sandbox_state(self) -> Literal["loading", "ready", "failed"]:
        """Where the background load of the sandbox is, without waiting (for readiness probes)."""
        return self._sandboxes.state()

    async def search_docs(
        self,
        query: str = "",
        server: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        detail: Detail = "signatures",
        identity: Identity | None = None,
    ) -> str:
        """The search_docs text for `identity` (what its policy lets it see); see `Catalogs.search`."""
        policy = self.policies.for_caller(identity)
        chain, loaded = self.middleware, self.loaded_note()
        return await self._catalogs.search(policy, query, server, limit, detail, identity, chain, loaded)

    @overload
    async def execute_code(
        self,
        code: str,
        timeout: float | None = None,
        approvals: Inline = ...,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
        identity: Identity | None = None,
        *,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> ExecutionResult: ...
    @overload
    async def execute_code(
        self,
        code: str,
        timeout: float | None,
        approvals: Approvals,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
        identity: Identity | None = None,
        *,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> ExecutionResult | ApprovalNeeded: ...
    async def execute_code(
        self,
        code: str,
        timeout: float | None = None,
        approvals: Approvals = INLINE,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
        identity: Identity | None = None,
        *,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> ExecutionResult | ApprovalNeeded:
        """Run a snippet whose calls reach the children (approvals: see `Executions.run`). `identity` (an
        authenticated HTTP caller) picks the policy's roles and is named in the audit log. `limits`
        replaces the sandbox's for this execution (a background execution's); `cancelled_as` says in
        the audit log why a cancelled execution ended."""
        sandbox = await self._sandboxes.ready(self._pool, self.config.startup_timeout_seconds)
        start = self._start(identity, client, progress)
        return await self._executions.run(
            sandbox, code, approvals, start, timeout, limits=limits, cancelled_as=cancelled_as
        )

    def _start(
        self, identity: Identity | None, client: types.Implementation | None, progress: Progress | None = None
    ) -> ExecutionStart:
        """What the executions `identity` starts begin with: its policy and catalog, the middleware now."""
        policy = self.policies.for_caller(identity)
        caller = caller_of(identity, client, policy.roles)
        start = ExecutionStart(self.catalog(policy, identity), policy, caller, self.middleware, progress)
        if identity is not None and identity.credential is not None:  # a static token a reload may take away
            start = replace(start, vouched=partial(self._still_vouched, identity))
        return start

    def _still_vouched(self, identity: Identity) -> bool:
        """Whether the static token that vouched for `identity` is in the config in force."""
        return still_configured(identity, self.config.auth)


def _middleware_of(config: GatewayConfig) -> tuple[object, float]:
    """What the middleware chain is loaded from: a reload that changes neither keeps it."""
    return config.middleware, config.middleware_timeout_seconds
