"""The gateway: the child pool, the catalog over it, the sandbox, and the tool calls between them."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, Self, overload

import anyio
import anyio.to_thread
from anyio import AsyncContextManagerMixin
from mcp import types

from gateway.audit import AuditLog, Caller, new_execution_id
from gateway.auth import Identity
from gateway.calls._approvals import Approvals, Inline
from gateway.calls._catalogs import Catalogs, searched
from gateway.calls._executions import Executions
from gateway.calls._exposed import ExposedTool, Exposure, PausedToolCall
from gateway.calls._pool import child_pool, child_settings, gateway_secrets
from gateway.calls._resources import ResourceReads
from gateway.calls._resume import (
    JOURNAL_BYTES_PER_STATE_BYTE,
    ApprovalNeeded,
    PausedRun,
    SpentStates,
    as_refusal,
)
from gateway.calls._tool_calls import AdmittedCall, PausedCallAnswer, Progress, Run, ToolCalls, wire_digest
from gateway.catalog import (
    DEFAULT_SEARCH_LIMIT,
    Catalog,
    CatalogLock,
    Detail,
    SemanticSearch,
    check_search,
    render_search,
    semantic_search,
    warm_search,
)
from gateway.children import ChildPool, ChildState, PoolChanges
from gateway.config import GatewayConfig
from gateway.errors import (
    ApprovalRequired,
    ExecutionFailed,
    ResumeRefused,
    SandboxUnavailable,
    StateUnavailable,
    ToolCallError,
)
from gateway.middleware import Chain, Search
from gateway.policy import Approver, Policies, Policy, no_approver, pause_for_approval
from gateway.sandbox import ErrorInfo, ExecutionResult, HostJournal, Sandbox, SandboxLimits, cancelled_error
from gateway.shared import Redactor
from gateway.state import Stores
from gateway.telemetry import Telemetry

__all__ = ["Gateway"]

INLINE = Inline()

log = logging.getLogger("gateway")

# How long a search naming a child still connecting waits for it before it answers without it.
SEARCH_WAIT_SECONDS = 10.0
SEARCH_THREADS = 2
"""Searches answered at once, each on a worker thread: the event loop never waits on one, and a
burst of heavy ones queues here instead of taking every worker thread."""


class Gateway(AsyncContextManagerMixin):
    """Entering starts the children and loads the sandbox in the background, then returns at once."""

    def __init__(self, config: GatewayConfig, telemetry: Telemetry | None = None) -> None:
        """`telemetry`: where its metrics and spans go (a registry of its own, the global tracer)."""
        self.config: GatewayConfig = config
        self.telemetry = telemetry or Telemetry()
        # What replicas share with `state` set (spent approvals, rate windows, shapes), else this process.
        self.stores = Stores.of(config.state)
        self.policies = Policies(config.policy, windows=self.stores.rates)
        self.policy = self.policies.base  # the policy of a caller no role names
        # The team's middleware (imported as the config was validated); each run takes the current one.
        self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.redactor = Redactor(gateway_secrets(config))
        self._audit: AuditLog | None = None
        self._pool = child_pool(config, self.redactor)
        self.telemetry.metrics.watch_children(self._pool.statuses, ChildState)
        self.telemetry.metrics.watch_sandbox(lambda: self._sandbox.slot_usage() if self._sandbox else None)
        self._sandbox: Sandbox | None = None
        self._sandbox_error: Exception | None = None
        self._sandbox_ready = anyio.Event()
        self._search_threads = anyio.CapacityLimiter(SEARCH_THREADS)
        # `search.semantic`: ConfigError if it is "on" and the extra is not installed.
        self._semantic = semantic_search(config.search.semantic)
        # The config's lockfile, read once here: a malformed one refuses to start (ConfigError).
        lock = CatalogLock.beside(config.config_file)
        self._catalogs = Catalogs(self._pool, config, self.policy, lock, self._semantic, self.stores.shapes)
        self._spent_states = SpentStates(config.approvals.ttl_seconds, self.stores.approvals)
        self._use_audit(None)
        self.loaded_at = datetime.now(UTC)  # when the config in force was loaded (search_docs says)
        self.reloads = 0  # config reloads applied since start

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
            stack.callback(self._close_sandbox)
            task_group = await stack.enter_async_context(anyio.create_task_group())
            task_group.start_soon(self._load_sandbox)
            if self._semantic is not None:
                loading = anyio.CancelScope()
                stack.callback(self._semantic.close)
                stack.callback(loading.cancel)  # a gateway leaving does not wait for the model
                task_group.start_soon(self._load_semantic, self._semantic, loading)
            yield self

    def _use_audit(self, audit: AuditLog | None) -> None:
        self._tool_calls = ToolCalls(self._pool, self.redactor, audit, self.catalog, self.telemetry)
        self._resources = ResourceReads(self._pool, self.redactor, audit, self.telemetry)
        self._executions = Executions(
            self.config, self._tool_calls, self._resources, self.redactor, self.telemetry, audit
        )

    def _close_sandbox(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()

    async def _load_sandbox(self) -> None:
        try:
            self._sandbox = await anyio.to_thread.run_sync(Sandbox, self.config.sandbox)
        except Exception as exc:  # reported on every execute_code, logged once here
            log.exception("the sandbox failed to load")
            self._sandbox_error = exc
        finally:
            self._sandbox_ready.set()

    async def _load_semantic(self, semantic: SemanticSearch, scope: anyio.CancelScope) -> None:
        # Off the event loop (loading the model, or building it on a first run); then the tools the
        # first searches will see are embedded, once the children have listed them. Searches are
        # lexical until then.
        with scope:
            if await anyio.to_thread.run_sync(semantic.load, abandon_on_cancel=True) is None:
                return  # logged by `load`
            await self._pool.wait_ready(timeout=self.config.startup_timeout_seconds)
            await anyio.to_thread.run_sync(warm_search, self.catalog(), abandon_on_cancel=True)

    @property
    def pool(self) -> ChildPool:
        return self._pool

    @property
    def audit(self) -> AuditLog | None:
        """The audit log, while the gateway is entered and the config has an `audit` section."""
        return self._audit

    def apply_config(self, config: GatewayConfig, lock: CatalogLock | None) -> PoolChanges:
        """Serve `config` from now on (a reload: validated, and holding only what applies live; see
        `gateway/reload/`). New executions get its policy and catalog; a run in flight keeps those it
        started with (its Run holds them). Children are started, stopped or replaced one by one."""
        self.redactor.add(gateway_secrets(config))  # first: a new child's secret is never shown
        if config.policy != self.config.policy:
            shared = self.stores.rates if self.stores.shared is not None else None  # local ones start over
            self.policies = Policies(config.policy, windows=shared)
            self.policy = self.policies.base
        if (config.middleware, config.middleware_timeout_seconds) != (
            self.config.middleware,
            self.config.middleware_timeout_seconds,
        ):
            self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.config = self._executions.config = config
        self._catalogs.reconfigure(config, self.policy, lock)  # rebuilt at the next look
        changes = self._pool.reconfigure(
            config.mcp_servers, child_settings(config), config.unavailable_servers
        )
        self._catalogs.start_exposed_servers()
        self.loaded_at = datetime.now(UTC)
        self.reloads += 1
        return changes

    @property
    def catalog_lock(self) -> CatalogLock | None:
        """The lockfile in force (read at start or by the last reload applied), None without one."""
        return self._catalogs.lock

    def swap_sandbox(self, sandbox: Sandbox) -> Sandbox | None:
        """Run new executions in `sandbox` (built for a reload's new limits); returns the one it
        replaces, which the executions already in it go on using until they end."""
        replaced, self._sandbox, self._sandbox_error = self._sandbox, sandbox, None
        self._sandbox_ready.set()
        return replaced

    def loaded_note(self) -> str | None:
        """That the config was reloaded, and when, for search_docs's overview; None before any reload
        (the config the gateway started with tells the model nothing)."""
        if not self.reloads:
            return None
        stamp = self.loaded_at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return f"Config reloaded {stamp} (reload {self.reloads}): tools may differ from earlier searches."

    def catalog(self, policy: Policy | None = None) -> Catalog:
        """What the model may see under `policy` (by default, the policy of a caller no role names)."""
        return self._catalogs.catalog(policy)

    async def catalog_changed(self, seen: Catalog) -> Catalog:
        """Wait until the catalog the model sees is no longer `seen`, and return the new one."""
        return await self._catalogs.changed(seen)

    def exposed(self) -> Exposure:
        """The tools `expose` lists that the model may call directly, for the current catalog."""
        return self._catalogs.exposed()

    async def settled_exposure(self) -> Exposure:
        """The exposed tools, once children still starting have had a moment to list their tools."""
        return await self._catalogs.settled_exposure(self._search_wait())

    async def exposed_tool(self, name: str) -> ExposedTool | None:
        """The exposed tool listed as `name`; while children are still starting, once they have."""
        return await self._catalogs.exposed_tool(name, self._search_wait())

    def _search_wait(self) -> float:
        return min(SEARCH_WAIT_SECONDS, self.config.startup_timeout_seconds)

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
        """Call an exposed tool for the client: the child's result, redacted; or the refusal
        (ToolCallError, ExecutionFailed). Inline, the approver asks the user while the call waits; in
        rounds, a call needing approval answers ApprovalNeeded, and the client retries with `resume`,
        which admits the same call again with the user's answer (there is no snippet to replay)."""
        if isinstance(approvals, Inline):
            run = self._new_run(new_execution_id(), approvals.approver, None, identity, client)
            call = await self._tool_calls.admit(run, tool.entry.qualified, arguments)
            return await self._complete_exposed(tool, call)
        resume = approvals.resume
        if resume is None:
            run = self._new_run(new_execution_id(), pause_for_approval, None, identity, client)
        else:
            paused = PausedToolCall.load(resume.state)
            try:
                await self._spent_states.spend(paused.nonce)
            except ResumeRefused:
                self.telemetry.approval_refused()
                raise ResumeRefused(
                    "this approval was already used: an approval answers one call. Call the tool again "
                    "to be asked again"
                ) from None
            run = self._new_run(paused.execution_id, pause_for_approval, None, identity, client)
            run.answer = PausedCallAnswer(resume.answer, paused.tool, paused.arguments_digest)
        try:
            call = await self._tool_calls.admit(run, tool.entry.qualified, arguments)
        except ApprovalRequired as pause:
            state = PausedToolCall(run.execution_id, pause.tool, wire_digest(pause.arguments, pause.callee))
            return ApprovalNeeded(pause.tool, pause.arguments, state.dump())
        return await self._complete_exposed(tool, call)

    async def _complete_exposed(self, tool: ExposedTool, call: AdmittedCall) -> types.CallToolResult:
        """The child's answer, bounded as a snippet's call is (`sandbox.tool_call_timeout_seconds`)."""
        timeout = self.config.sandbox.tool_call_timeout_seconds
        try:
            with anyio.fail_after(timeout):
                return await self._tool_calls.complete_raw(call)
        except TimeoutError:
            raise ToolCallError(
                f"{tool.entry.qualified} timed out after {timeout:g} s (sandbox.tool_call_timeout_seconds)"
            ) from None

    def execute_code_annotations(self) -> tuple[bool, bool]:
        """execute_code's (readOnlyHint, destructiveHint): what the callable tools can do."""
        complete = all(s.state is not ChildState.CONNECTING for s in self._pool.statuses())
        return self.policy.execute_code_annotations(self.catalog(), complete=complete)

    async def sandbox(self) -> Sandbox:
        """The loaded sandbox, waiting for the background load if it is still running."""
        await self._sandbox_ready.wait()
        if self._sandbox is None:
            raise SandboxUnavailable(f"the sandbox is unavailable: {self._sandbox_error}")
        return self._sandbox

    def sandbox_state(self) -> Literal["loading", "ready", "failed"]:
        """Where the background load of the sandbox is, without waiting (for readiness probes)."""
        if not self._sandbox_ready.is_set():
            return "loading"
        return "ready" if self._sandbox is not None else "failed"

    async def search_docs(
        self,
        query: str = "",
        server: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        detail: Detail = "signatures",
        identity: Identity | None = None,
    ) -> str:
        """The search_docs text for `identity` (what its policy lets it see), naming the children still
        starting (a search naming one waits for it). SearchRefused for a query past
        `search.max_query_chars` (or a server name past the name cap), before any work is spent on it."""
        max_query_chars = self.config.search.max_query_chars
        check_search(query, server, max_query_chars)
        policy = self.policies.for_caller(identity)
        named = self.catalog(policy).server(server) if server is not None else None
        if named is not None:
            self._pool.start(named.name)  # a lazy child starts when a search names it
            # Only a search naming one child waits for it; any other answers with the children
            # that are ready and names those still starting.
            with anyio.move_on_after(min(SEARCH_WAIT_SECONDS, self.config.startup_timeout_seconds)):
                await self._pool.wait_child(named.name)
        catalog = self.catalog(policy)
        if self.middleware.searches:
            search = Search(query, server, identity.principal if identity else None, policy.roles)
            catalog = await searched(self.middleware, catalog, search)
        render = partial(
            render_search,
            catalog,
            query,
            server,
            limit,
            detail,
            loaded=self.loaded_note(),
            max_query_chars=max_query_chars,
        )
        return await anyio.to_thread.run_sync(render, limiter=self._search_threads)

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
        """Run a snippet whose tool calls reach the children. Inline, the approver asks the user while
        a call waits; in rounds (MCP 2026-07-28), a call needing approval pauses the run
        (ApprovalNeeded), and `resume` replays it to that call without touching a child, then runs
        on. `identity` (an authenticated HTTP caller) picks the policy's roles and is named in the
        audit log. `limits` replaces the sandbox's for this run (a background execution's);
        `cancelled_as` says in the audit log why a cancelled run ended."""
        sandbox = await self._ready_sandbox()
        if isinstance(approvals, Inline):
            run = self._new_run(new_execution_id(), approvals.approver, progress, identity, client)
            result, _ = await self._executions.execute(
                sandbox, code, run, timeout, limits=limits, cancelled_as=cancelled_as
            )
            return result
        resume = approvals.resume
        journal_cap = self.config.approvals.max_state_bytes * JOURNAL_BYTES_PER_STATE_BYTE
        if resume is None:
            run = self._new_run(new_execution_id(), pause_for_approval, progress, identity, client)
            journal, round_number = HostJournal(max_bytes=journal_cap), 1
        else:
            try:
                paused = PausedRun.load(resume.state)
                paused.check(code, sandbox.component_sha256)
                await self._spent_states.spend(paused.nonce)
            except (ResumeRefused, StateUnavailable) as exc:
                self.telemetry.approval_refused()
                refused = ExecutionResult(ok=False, error=ErrorInfo.from_exception(as_refusal(exc)))
                run = self._new_run(new_execution_id(), no_approver, None, identity, client)
                self._executions.record(run, code, refused, sandbox, timeout)
                return refused
            run = self._new_run(paused.execution_id, pause_for_approval, progress, identity, client)
            run.answer = PausedCallAnswer(resume.answer, paused.shown_tool, paused.shown_digest)
            run.began_at = paused.began_at
            run.quota.restore(paused.quota)
            journal, round_number = paused.journal(journal_cap), paused.round + 1
        result, state = await self._executions.execute(
            sandbox, code, run, timeout, journal=journal, round_number=round_number, limits=limits
        )
        if run.paused is None or state is None:
            return result
        return ApprovalNeeded(run.paused.tool, run.paused.arguments, state)

    async def _ready_sandbox(self) -> Sandbox:
        await self.sandbox()
        # Children still starting would be missing from the catalog: give them their startup time.
        await self._pool.wait_ready(timeout=self.config.startup_timeout_seconds)
        return await self.sandbox()  # the one in force now: a reload may have replaced it meanwhile

    def _new_run(
        self,
        execution_id: str,
        approver: Approver,
        progress: Progress | None,
        identity: Identity | None,
        client: types.Implementation | None,
    ) -> Run:
        policy = self.policies.for_caller(identity)
        caller = Caller(
            principal=identity.principal if identity else None,
            issuer=identity.owner.issuer if identity else None,
            roles=policy.roles,
            oauth_client=identity.client if identity else None,
            client_name=client.name if client else None,
            client_version=client.version if client else None,
        )
        return Run(execution_id, self.catalog(policy), policy, approver, progress, caller, self.middleware)
