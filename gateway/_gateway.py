"""The product's core: the child pool, the catalog over it, and the sandbox that calls it."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
from mcp import types

from gateway._audit import Approval, AuditLog, new_execution_id
from gateway._config import GatewayConfig
from gateway._secrets import Redactor
from gateway.catalog import Catalog, CatalogEntry, Detail, prepare_arguments, render_search, tool_result_value
from gateway.children import ChildPool, ChildState
from gateway.errors import ChildUnavailable, PolicyDenied, SandboxUnavailable, ToolCallError
from gateway.policy import ApprovalOutcome, Approver, ExecutionQuota, Policy, no_approver
from gateway.sandbox import ExecutionResult, Sandbox

__all__ = ["Gateway"]

log = logging.getLogger(__name__)

# How long search_docs waits for children that are still connecting before it answers without them.
SEARCH_WAIT_SECONDS = 10.0


class Gateway:
    """Entering starts the children and loads the sandbox in the background, then returns at once."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.policy = Policy(config.policy)
        self.redactor = Redactor.from_config(config)
        self._audit: AuditLog | None = None
        self._pool = ChildPool(
            config.mcp_servers, startup_timeout_seconds=config.startup_timeout_seconds, restart=config.restart
        )
        self._sandbox: Sandbox | None = None
        self._sandbox_error: Exception | None = None
        self._sandbox_ready = anyio.Event()
        self._catalog_key: tuple[Any, ...] | None = None
        self._catalog = Catalog()
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:  # unwinds whatever was entered if a later step fails
            if self.config.audit is not None:
                self._audit = AuditLog.from_config(self.config.audit, self.config.base_dir, self.redactor)
                stack.callback(self._audit.close)
            await stack.enter_async_context(self._pool)
            stack.callback(self._close_sandbox)
            task_group = await stack.enter_async_context(anyio.create_task_group())
            task_group.start_soon(self._load_sandbox)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stack.__aexit__(exc_type, exc, tb)

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

    @property
    def pool(self) -> ChildPool:
        return self._pool

    def catalog(self) -> Catalog:
        """What the model may see: the children's tools less the hidden ones, rebuilt on any change."""
        statuses = self._pool.statuses()
        key = tuple(statuses)  # whole snapshots: a tools/list_changed bumps `tools_version`
        if key != self._catalog_key:
            everything = Catalog(self._pool.tools(), statuses)
            self._catalog = everything.filtered(self.policy.visible, self.policy.server_visible)
            self._catalog_key = key
        return self._catalog

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

    async def search_docs(
        self, query: str = "", server: str | None = None, limit: int = 10, detail: Detail = "signatures"
    ) -> str:
        """The search_docs text, once children still starting have had a moment to list their tools."""
        named = self.catalog().server(server) if server is not None else None
        if named is not None:
            self._pool.start(named.name)  # a lazy child starts when a search names it
        await self._pool.wait_ready(timeout=min(SEARCH_WAIT_SECONDS, self.config.startup_timeout_seconds))
        return render_search(self.catalog(), query, server, limit, detail)

    async def execute_code(
        self,
        code: str,
        timeout: float | None = None,
        approver: Approver = no_approver,
        client: types.Implementation | None = None,
        progress: Progress | None = None,
    ) -> ExecutionResult:
        """Run a snippet whose tool calls reach the children through this execution's catalog."""
        sandbox = await self.sandbox()
        # Children still starting would be missing from the catalog: give them their startup time.
        await self._pool.wait_ready(timeout=self.config.startup_timeout_seconds)
        run = _Run(new_execution_id(), self.catalog(), self.policy.new_execution(), approver, progress)
        result = await self._run_with_progress(sandbox, code, run, timeout)
        result = self.redactor.redact_result(result)
        self._record(
            lambda audit: audit.execution(
                run.execution_id,
                code,
                result,
                limits=sandbox.limits,
                timeout=sandbox.timeout_for(timeout),
                client_name=client.name if client else None,
                client_version=client.version if client else None,
            )
        )
        return result

    async def _run_with_progress(
        self, sandbox: Sandbox, code: str, run: _Run, timeout: float | None
    ) -> ExecutionResult:
        caller = partial(self._call_tool, run)
        if run.progress is None:
            return await sandbox.execute(code, tool_caller=caller, timeout=timeout)
        results: list[ExecutionResult] = []
        async with anyio.create_task_group() as heartbeat:
            heartbeat.start_soon(run.heartbeat)
            try:
                results.append(await sandbox.execute(code, tool_caller=caller, timeout=timeout))
            finally:
                heartbeat.cancel_scope.cancel()
        return results[0]

    async def _call_tool(self, run: _Run, name: str, arguments: dict[str, Any]) -> Any:
        started = time.monotonic()
        approval: Approval = "not_required"
        failure: BaseException | None = None
        wire = arguments
        try:
            entry = run.catalog.get(name) or await self._first_use_of_lazy_child(run.catalog, name)
            if entry is None:
                raise ToolCallError(_unknown_tool_message(run.catalog, name))
            # Access first, so a denied tool's schema is never described; constraints see the wire form.
            self.policy.check_access(entry)
            wire = prepare_arguments(entry, arguments)
            self.policy.check_arguments(entry, wire)
            run.quota.acquire(entry)
            if self.policy.needs_approval(entry):
                approval = await run.approver(entry.qualified, wire)
                _raise_unless_approved(entry.qualified, approval)
            try:
                result = await self._pool.call_tool(entry.server_name, entry.tool_name, wire)
            except ChildUnavailable as exc:
                raise ToolCallError(str(exc)) from exc
            # A secret the gateway expanded never reaches the snippet, so no transform can leak it:
            # neither in a result nor in the text of a child's error.
            return self.redactor.redact_json(tool_result_value(result))
        except ToolCallError as exc:
            failure = exc
            exc.args = (self.redactor.redact(str(exc)),)
            raise
        except BaseException as exc:
            failure = exc
            raise
        finally:
            run.calls += 1
            await run.report()
            ms = round((time.monotonic() - started) * 1000, 3)
            self._record(
                lambda audit: audit.tool_call(
                    run.execution_id, name, wire, ms=ms, error=failure, approval=approval
                )
            )

    async def _first_use_of_lazy_child(self, catalog: Catalog, name: str) -> CatalogEntry | None:
        """Start an idle lazy child that was never listed, and look the tool up once it has listed."""
        status = catalog.server(name.partition(".")[0])
        if status is None or status.state is not ChildState.IDLE:
            return None
        self._pool.start(status.name)
        await self._pool.wait_child(status.name)  # the host's per-call timeout bounds this wait
        return self.catalog().get(name)

    def _record(self, write: Callable[[AuditLog], None]) -> None:
        if self._audit is None:
            return
        try:
            write(self._audit)
        except OSError:  # a full disk must not take the gateway down; it is loud in the log instead
            log.exception("cannot write the audit log")


Progress = Callable[[int, float], Awaitable[None]]
"""Told (tool calls made so far, seconds elapsed) after each tool call and every PROGRESS_SECONDS."""

PROGRESS_SECONDS = 1.0


@dataclass
class _Run:
    """What one execution's tool calls share: its id, the catalog it started with, quota, approver."""

    execution_id: str
    catalog: Catalog
    quota: ExecutionQuota
    approver: Approver
    progress: Progress | None = None
    calls: int = 0
    started: float = field(default_factory=time.monotonic)

    async def report(self) -> None:
        if self.progress is None:
            return
        with anyio.CancelScope(shield=True):  # a progress message is never half sent
            try:
                await self.progress(self.calls, time.monotonic() - self.started)
            except Exception:  # progress is best effort: a client gone away must not fail the run
                log.debug("progress notification failed", exc_info=True)

    async def heartbeat(self) -> None:
        while True:
            await anyio.sleep(PROGRESS_SECONDS)
            await self.report()


def _raise_unless_approved(tool: str, outcome: ApprovalOutcome) -> None:
    if outcome == "approved":
        return
    if outcome == "declined":
        raise PolicyDenied(
            f"{tool} needs the user's approval (policy.approve) and the user declined", rule="approve"
        )
    raise PolicyDenied(
        f"{tool} needs the user's approval (policy.approve), but this client cannot ask the user "
        "(no MCP elicitation support); ask the user to run it themselves or change the policy",
        rule="approve",
    )


def _unknown_tool_message(catalog: Catalog, name: str) -> str:
    server = name.partition(".")[0]
    status = catalog.server(server)
    if status is not None and status.state is not ChildState.READY:
        reason = f": {status.status.error}" if status.status.error else ""
        return f"server {server!r} is {status.state}{reason}; its tools cannot be called now"
    suggestions = catalog.suggest(name)
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else "."
    return f"unknown tool {name!r}{hint} Call search_docs to find tools."
