"""The gateway: the child pool, the catalog over it, the sandbox, and the tool calls between them."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, Self

import anyio
import anyio.to_thread
from anyio import AsyncContextManagerMixin
from mcp import types

from gateway.audit import AuditLog, Caller, new_execution_id
from gateway.auth import Identity
from gateway.calls._exposed import ExposedTool, Exposure, PausedToolCall, expose_tools
from gateway.calls._resources import ResourceReads
from gateway.calls._resume import (
    JOURNAL_BYTES_PER_STATE_BYTE,
    ApprovalNeeded,
    PausedRun,
    Resume,
    SpentStates,
    paused_run,
)
from gateway.calls._tool_calls import AdmittedCall, PausedCallAnswer, Progress, Run, ToolCalls, wire_digest
from gateway.catalog import (
    DEFAULT_SEARCH_LIMIT,
    Catalog,
    CatalogLock,
    Detail,
    ObservedShapes,
    Quarantine,
    SemanticSearch,
    check_search,
    render_search,
    semantic_search,
    warm_search,
)
from gateway.children import ChildPool, ChildSettings, ChildState, PoolChanges, inherited_credentials
from gateway.config import GatewayConfig, config_secrets
from gateway.errors import (
    ApprovalRequired,
    ExecutionFailed,
    GuestCrashed,
    ResumeRefused,
    SandboxUnavailable,
    ToolCallError,
)
from gateway.middleware import Chain, Search, SearchEntry
from gateway.policy import Approver, Policies, Policy, no_approver, pause_for_approval
from gateway.sandbox import ErrorInfo, ExecutionResult, HostJournal, Sandbox, SandboxLimits, cancelled_error
from gateway.shared import Redactor
from gateway.telemetry import Telemetry

__all__ = ["Gateway"]

log = logging.getLogger("gateway")

# How long search_docs waits for children that are still connecting before it answers without them.
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
        self.policies = Policies(config.policy)
        self.policy = self.policies.base  # the policy of a caller no role names
        # The team's middleware (imported as the config was validated); each run takes the current one.
        self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.redactor = Redactor(gateway_secrets(config))
        self._audit: AuditLog | None = None
        self._pool = child_pool(config, self.redactor)
        self.telemetry.metrics.watch_children(self._pool.statuses, ChildState)
        self.telemetry.metrics.watch_sandbox(lambda: self._sandbox.slot_usage() if self._sandbox else None)
        self._tool_calls = ToolCalls(self._pool, self.redactor, None, self.catalog, self.telemetry)
        self._resources = ResourceReads(self._pool, self.redactor, None)
        self._sandbox: Sandbox | None = None
        self._sandbox_error: Exception | None = None
        self._sandbox_ready = anyio.Event()
        self._search_threads = anyio.CapacityLimiter(SEARCH_THREADS)
        self._catalog_key: tuple[Any, ...] | None = None
        self._everything = Catalog()  # before the policy filtered it
        self._catalogs: dict[Policy, Catalog] = {}  # as each caller's policy filters it
        self._quarantine: Quarantine | None = None
        self._blocked: dict[str, str] = {}
        # The config's lockfile, read once here: a malformed one refuses to start (ConfigError).
        self._lock = CatalogLock.beside(config.config_file)
        # `search.semantic`: ConfigError if it is "on" and the extra is not installed.
        self._semantic = semantic_search(config.search.semantic)
        self._shapes = ObservedShapes()  # of what tools without an output schema returned
        self._spent_states = SpentStates(config.approvals.ttl_seconds)
        self._exposure = Exposure()
        self._exposure_of: Catalog | None = None  # the catalog `_exposure` was computed from
        self._unlisted: dict[str, str] = {}  # expose entries logged as not listed, with the reason
        self.loaded_at = datetime.now(UTC)  # when the config in force was loaded (search_docs says)
        self.reloads = 0  # config reloads applied since start

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncGenerator[Self]:
        async with AsyncExitStack() as stack:  # unwinds whatever was entered if a later step fails
            if self.config.audit is not None:
                self._audit = AuditLog.from_config(self.config.audit, self.config.base_dir, self.redactor)
                stack.callback(self._audit.close)
                self._tool_calls = ToolCalls(
                    self._pool, self.redactor, self._audit, self.catalog, self.telemetry
                )
                self._resources = ResourceReads(self._pool, self.redactor, self._audit)
            await stack.enter_async_context(self._pool)
            self._start_exposed_servers()
            stack.callback(self._close_sandbox)
            task_group = await stack.enter_async_context(anyio.create_task_group())
            task_group.start_soon(self._load_sandbox)
            if self._semantic is not None:
                loading = anyio.CancelScope()
                stack.callback(self._semantic.close)
                stack.callback(loading.cancel)  # a gateway leaving does not wait for the model
                task_group.start_soon(self._load_semantic, self._semantic, loading)
            yield self

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
            self.policies = Policies(config.policy)  # its rate windows start over
            self.policy = self.policies.base
        if (config.middleware, config.middleware_timeout_seconds) != (
            self.config.middleware,
            self.config.middleware_timeout_seconds,
        ):
            self.middleware = Chain.load(config.middleware, config.middleware_timeout_seconds)
        self.config = config
        self._lock = lock
        self._catalog_key = None  # rebuilt at the next look, under the new policy and lockfile
        changes = self._pool.reconfigure(
            config.mcp_servers, child_settings(config), config.unavailable_servers
        )
        self._start_exposed_servers()
        self.loaded_at = datetime.now(UTC)
        self.reloads += 1
        return changes

    @property
    def catalog_lock(self) -> CatalogLock | None:
        """The lockfile in force (read at start or by the last reload applied), None without one."""
        return self._lock

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
        """What the model may see under `policy` (by default, the policy of a caller no role names):
        the children's tools less the hidden ones, rebuilt on any change.

        A server named by a policy rule (of the policy or of a role) that matches none of its tools
        keeps no tools at all until the rule is fixed: a typo must never leave a tool more reachable
        than the team wrote. With a lockfile, tools new or changed since it was written are
        quarantined (`catalog/_quarantine.py`).
        """
        policy = policy or self.policy
        statuses = self._pool.statuses()
        key = tuple(statuses)  # whole snapshots: a tools/list_changed bumps `tools_version`
        if key != self._catalog_key:
            tools = self._pool.tools()
            reviewed = self._lock.lock.servers if self._lock else None
            search = self.config.search
            self._everything = Catalog(
                tools,
                statuses,
                reviewed=reviewed,
                semantic=self._semantic,
                shapes=self._shapes if search.observed_shapes else None,
                instructions_chars=search.server_instructions_chars,
            )
            self._quarantine = self._lock.quarantine(tools, self._pool.names) if self._lock else None
            blocked = self.policy.unmatched(self._everything)
            for server, reason in blocked.items():
                if self._blocked.get(server) != reason:
                    log.error("a policy rule blocks a server", extra={"server": server, "reason": reason})
            self._blocked = blocked
            self._catalogs = {}
            self._catalog_key = key
        catalog = self._catalogs.get(policy)
        if catalog is None:
            catalog = self._catalogs[policy] = self._everything.filtered(
                policy.visible,
                policy.server_visible,
                blocked=self._blocked,
                access=policy.access_note,
                quarantine=self._quarantine,
                resources=policy.resources_visible,
            )
        return catalog

    async def catalog_changed(self, seen: Catalog) -> Catalog:
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
                self.config.expose,
                catalog,
                self.policy,
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
        servers = (catalog.server(name.partition(".")[0]) for name in self.config.expose)
        return list(dict.fromkeys(s.name for s in servers if s is not None and s.state is state))

    def _start_exposed_servers(self) -> None:
        """Start the lazy children of exposed tools once, so that tools/list can show them (they stay
        listed while the child idles, and a call starts it again)."""
        for name in self._exposed_servers(ChildState.IDLE):
            self._pool.start(name)

    async def settled_exposure(self) -> Exposure:
        """The exposed tools, once their children still starting have had a moment to list their tools
        (as search_docs gives them): a client that lists tools once, at start, should find them."""
        with anyio.move_on_after(min(SEARCH_WAIT_SECONDS, self.config.startup_timeout_seconds)):
            for name in self._exposed_servers(ChildState.CONNECTING):
                await self._pool.wait_child(name)
        return self.exposed()

    async def exposed_tool(self, name: str) -> ExposedTool | None:
        """The exposed tool listed as `name`; while children are still starting, once they have."""
        found = self.exposed().get(name)
        if found is None and self.config.expose:
            found = (await self.settled_exposure()).get(name)
        return found

    async def call_exposed(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        approver: Approver = no_approver,
        identity: Identity | None = None,
        client: types.Implementation | None = None,
    ) -> types.CallToolResult:
        """Call an exposed tool for the client: the child's result, redacted; or the refusal
        (ToolCallError, ExecutionFailed). `approver` asks the user while the call waits."""
        run = self._new_run(new_execution_id(), approver, None, identity, client)
        call = await self._tool_calls.admit(run, tool.entry.qualified, arguments)
        return await self._complete_exposed(tool, call)

    async def call_exposed_in_rounds(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        resume: Resume | None = None,
        identity: Identity | None = None,
        client: types.Implementation | None = None,
    ) -> types.CallToolResult | ApprovalNeeded:
        """Call an exposed tool, pausing where the user must approve it (MCP 2026-07-28).

        A pause answers ApprovalNeeded; the client asks the user and retries with `resume`, which
        admits the same call again with the user's answer (there is no snippet to replay).
        """
        if resume is None:
            run = self._new_run(new_execution_id(), pause_for_approval, None, identity, client)
        else:
            paused = PausedToolCall.load(resume.state)
            try:
                self._spent_states.spend(paused.nonce)
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
        """The search_docs text for `identity` (what its policy lets it see), once children still
        starting have had a moment to list their tools. SearchRefused for a query past
        `search.max_query_chars` (or a server name past the name cap), before any work is spent on it."""
        max_query_chars = self.config.search.max_query_chars
        check_search(query, server, max_query_chars)
        policy = self.policies.for_caller(identity)
        named = self.catalog(policy).server(server) if server is not None else None
        if named is not None:
            self._pool.start(named.name)  # a lazy child starts when a search names it
        await self._pool.wait_ready(timeout=min(SEARCH_WAIT_SECONDS, self.config.startup_timeout_seconds))
        catalog = self.catalog(policy)
        if self.middleware.searches:
            search = Search(query, server, identity.principal if identity else None, policy.roles)
            catalog = await _searched(self.middleware, catalog, search)
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

    async def execute_code(
        self,
        code: str,
        timeout: float | None = None,
        approver: Approver = no_approver,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
        identity: Identity | None = None,
        *,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> ExecutionResult:
        """Run a snippet whose tool calls reach the children; `approver` asks the user while a call waits.
        `identity` (an authenticated HTTP caller) picks the policy's roles and is named in the audit log.
        `limits` replaces the sandbox's for this run (a background execution's); `cancelled_as` says
        in the audit log why a cancelled run ended."""
        sandbox = await self._ready_sandbox()
        run = self._new_run(new_execution_id(), approver, progress, identity, client)
        result, _ = await self._execute(sandbox, code, run, timeout, limits=limits, cancelled_as=cancelled_as)
        return result

    async def execute_code_in_rounds(
        self,
        code: str,
        timeout: float | None = None,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
        resume: Resume | None = None,
        identity: Identity | None = None,
    ) -> ExecutionResult | ApprovalNeeded:
        """Run a snippet that pauses at each call the user must approve (MCP 2026-07-28).

        A pause answers ApprovalNeeded; the client asks the user, and `resume` (its state and the
        answer) replays the run to that call without touching a child, then runs on from there.
        """
        sandbox = await self._ready_sandbox()
        journal_cap = self.config.approvals.max_state_bytes * JOURNAL_BYTES_PER_STATE_BYTE
        if resume is None:
            run = self._new_run(new_execution_id(), pause_for_approval, progress, identity, client)
            journal, round_number = HostJournal(max_bytes=journal_cap), 1
        else:
            try:
                paused = PausedRun.load(resume.state)
                paused.check(code, sandbox.component_sha256)
                self._spent_states.spend(paused.nonce)
            except ResumeRefused as exc:
                self.telemetry.approval_refused()
                refused = ExecutionResult(ok=False, error=ErrorInfo.from_exception(exc))
                run = self._new_run(new_execution_id(), no_approver, None, identity, client)
                self._record_execution(run, code, refused, sandbox, timeout)
                return refused
            run = self._new_run(paused.execution_id, pause_for_approval, progress, identity, client)
            run.answer = PausedCallAnswer(resume.answer, paused.shown_tool, paused.shown_digest)
            run.began_at = paused.began_at
            run.quota.restore(paused.quota)
            journal, round_number = paused.journal(journal_cap), paused.round + 1
        result, state = await self._execute(
            sandbox, code, run, timeout, journal=journal, round_number=round_number
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

    async def _execute(
        self,
        sandbox: Sandbox,
        code: str,
        run: Run,
        timeout: float | None,
        *,
        journal: HostJournal | None = None,
        round_number: int = 1,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> tuple[ExecutionResult, str | None]:
        """The run's result, and its state when it paused for approval (then its error says so)."""
        result: ExecutionResult | None = None
        state: str | None = None
        run.span = self.telemetry.execution_started(run.execution_id, round_number)
        try:
            result = redacted_result(
                self.redactor, await self._run_with_progress(sandbox, code, run, timeout, journal, limits)
            )
            if run.paused is not None and journal is not None:
                try:
                    state = self._paused_state(run, run.paused, round_number, code, sandbox, journal)
                except ExecutionFailed as exc:  # over an approvals limit: the run ends here
                    result = result.model_copy(update={"error": ErrorInfo.from_exception(exc)})
            return result, state
        finally:
            # Every execution gets its record: a cancelled one (or one the host failed) too.
            if result is None:
                error = sys.exc_info()[1]
                failure = cancelled_as() if isinstance(error, anyio.get_cancelled_exc_class()) else None
                result = _unfinished(failure or GuestCrashed(f"the host failed: {type(error).__name__}"), run)
            self._record_execution(run, code, result, sandbox, timeout, round_number, limits)

    def _paused_state(
        self,
        run: Run,
        paused_at: ApprovalRequired,
        round_number: int,
        code: str,
        sandbox: Sandbox,
        journal: HostJournal,
    ) -> str:
        """The state that resumes a run which just paused, or ApprovalLimitExceeded."""
        approvals = self.config.approvals
        paused = paused_run(
            run.execution_id,
            run.began_at,
            round_number,
            code,
            sandbox.component_sha256,
            journal,
            paused_at.tool,
            wire_digest(paused_at.arguments, paused_at.callee),
            run.quota.counts(),
            approvals,
        )
        return paused.dump(approvals)

    def _record_execution(
        self,
        run: Run,
        code: str,
        result: ExecutionResult,
        sandbox: Sandbox,
        timeout: float | None,
        round_number: int = 1,
        limits: SandboxLimits | None = None,
    ) -> None:
        self.telemetry.execution_finished(run.span, run.started, result, run.calls)
        if self._audit is None:
            return
        self._audit.record(
            lambda audit: audit.execution(
                run.execution_id,
                code,
                result,
                limits=limits or sandbox.limits,
                timeout=sandbox.timeout_for(timeout, limits),
                tool_calls=run.calls,
                round_number=round_number,
                caller=run.caller,
            )
        )

    async def _run_with_progress(
        self,
        sandbox: Sandbox,
        code: str,
        run: Run,
        timeout: float | None,
        journal: HostJournal | None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        execute = partial(
            sandbox.execute,
            code,
            tool_caller=partial(self._tool_calls.call, run),
            admit=partial(self._tool_calls.prepare, run),
            resources=partial(self._resources.answer, run),
            timeout=timeout,
            journal=journal,
            docs=partial(
                self._tool_calls.read_catalog, run, max_query_chars=self.config.search.max_query_chars
            ),
            limits=limits,
        )
        if run.progress is None:
            return await execute()
        results: list[ExecutionResult] = []
        async with anyio.create_task_group() as heartbeat:
            heartbeat.start_soon(run.heartbeat)
            try:
                results.append(await execute())
            finally:
                heartbeat.cancel_scope.cancel()
        return results[0]


async def _searched(middleware: Chain, catalog: Catalog, search: Search) -> Catalog:
    """`catalog` as the middleware's on_search hooks let search_docs show it: filtered, annotated."""
    entries = [SearchEntry(entry.qualified, entry.server_name, entry.description) for entry in catalog]
    kept = {entry.tool: entry.description for entry in await middleware.on_search(entries, search)}
    return catalog.filtered(
        lambda entry: entry.qualified in kept,
        blocked={server.identifier: server.blocked for server in catalog.servers if server.blocked},
        access=lambda entry: entry.access,
        describe=lambda entry: kept[entry.qualified],
    )


def _unfinished(error: ExecutionFailed, run: Run) -> ExecutionResult:
    """What an execution that never returned a result looks like in the audit log."""
    ms = round((time.monotonic() - run.started) * 1000, 3)
    return ExecutionResult(ok=False, error=ErrorInfo.from_exception(error), ms=ms)


def redacted_result(redactor: Redactor, result: ExecutionResult) -> ExecutionResult:
    """A copy of an execution's result with secrets redacted from everything a client sees."""
    if not redactor:
        return result
    text = redactor.redact_text
    error = result.error
    if error is not None:
        traceback = text(error.traceback, "traceback") if error.traceback is not None else None
        error = error.model_copy(update={"message": text(error.message, "message"), "traceback": traceback})
    calls = [
        call.model_copy(
            update={
                "tool": text(call.tool, "tool name"),
                "error": text(call.error, "error") if call.error else call.error,
                "message": text(call.message, "error") if call.message else call.message,
            }
        )
        for call in result.tool_calls
    ]
    return result.model_copy(
        update={
            "stdout": text(result.stdout, "stdout"),
            "stderr": text(result.stderr, "stderr"),
            "value": redactor.redact_value(result.value),
            "value_repr": text(result.value_repr, "value") if result.value_repr is not None else None,
            "error": error,
            "tool_calls": calls,
        }
    )


def gateway_secrets(config: GatewayConfig) -> dict[str, str | None]:
    """Every value a gateway on `config` redacts: the config's secrets and what children inherit."""
    return {**inherited_credentials(), **config_secrets(config)}


def child_settings(config: GatewayConfig) -> ChildSettings:
    """The settings `config` gives every child that does not override them."""
    return ChildSettings(
        config.startup_timeout_seconds,
        config.restart,
        config.max_message_bytes,
        config.max_concurrent_calls,
        config.sandbox.tool_call_timeout_seconds,
    )


def child_pool(config: GatewayConfig, redactor: Redactor, *, supervise: bool = True) -> ChildPool:
    """The pool of `config`'s children; `supervise=False` tries each once, lazy ones too (for `check`)."""
    return ChildPool(
        config.mcp_servers,
        startup_timeout_seconds=config.startup_timeout_seconds,
        restart=config.restart,
        reconnect=supervise,
        start_lazy=not supervise,
        max_message_bytes=config.max_message_bytes,
        max_concurrent_calls=config.max_concurrent_calls,
        tool_call_timeout_seconds=config.sandbox.tool_call_timeout_seconds,
        redact=redactor.redact,
        unavailable=config.unavailable_servers,
    )
