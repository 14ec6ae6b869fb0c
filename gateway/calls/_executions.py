"""One execution from the gateway's side: the services its snippet reaches, its pause, its record."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from gateway.audit import AuditLog, new_execution_id
from gateway.calls._approvals import Approvals, Inline
from gateway.calls._pipeline import Execution, ExecutionStart, PausedCallAnswer
from gateway.calls._resources import ResourceReads
from gateway.calls._resume import (
    JOURNAL_BYTES_PER_STATE_BYTE,
    ApprovalNeeded,
    PausedExecution,
    Resume,
    SpentStates,
    as_refusal,
    paused_execution,
)
from gateway.calls._tool_calls import ToolCalls, wire_digest
from gateway.config import GatewayConfig
from gateway.errors import ApprovalRequired, ExecutionFailed, GuestCrashed, ResumeRefused, StateUnavailable
from gateway.policy import no_approver, pause_for_approval
from gateway.sandbox import cancelled_error
from gateway.sandbox.journal import HostJournal
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult
from gateway.shared import Redactor
from gateway.telemetry import Telemetry

if TYPE_CHECKING:  # the sandbox's runtime loads with the first sandbox, not with the gateway
    from gateway.sandbox import Sandbox

__all__ = ["ExecutionServices", "Executions", "redacted_result"]


@dataclass(frozen=True)
class ExecutionServices:
    """The sandbox's `HostServices` for one execution: its tool calls, resource reads and catalog."""

    execution: Execution
    tool_calls: ToolCalls
    resources: ResourceReads
    max_query_chars: int

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool for the snippet; ToolCallError for a refusal."""
        return await self.tool_calls.call(self.execution, name, arguments)

    async def admit(self, name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        """Admit a call the snippet runs side by side; return what completes it."""
        return await self.tool_calls.prepare(self.execution, name, arguments)

    async def read_resources(self, request: dict[str, Any]) -> Any:
        """List a server's resources or read one; ToolCallError for a refusal."""
        return await self.resources.answer(self.execution, request)

    def read_docs(self, service: str, payload: dict[str, Any]) -> Any:
        """Answer `@search`, `@docs` or `@precheck` from the execution's catalog."""
        return self.tool_calls.read_catalog(
            self.execution, service, payload, max_query_chars=self.max_query_chars
        )


class Executions:
    """Runs snippets in the sandbox for the gateway: progress, the pause state, redaction, the record."""

    def __init__(
        self,
        config: GatewayConfig,
        tool_calls: ToolCalls,
        resources: ResourceReads,
        redactor: Redactor,
        telemetry: Telemetry,
        audit: AuditLog | None,
        spent_states: SpentStates,
    ) -> None:
        self.config = config  # replaced by a reload
        self._tool_calls = tool_calls
        self._resources = resources
        self._spent_states = spent_states
        self._redactor = redactor
        self._telemetry = telemetry
        self._audit = audit

    async def run(
        self,
        sandbox: Sandbox,
        code: str,
        approvals: Approvals,
        start: ExecutionStart,
        timeout: float | None,
        *,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> ExecutionResult | ApprovalNeeded:
        """Run a snippet as a new execution from `start`: inline, the approver asks the user while a call
        waits; in rounds, a call needing approval pauses it (ApprovalNeeded) and a resume replays it."""
        if isinstance(approvals, Inline):
            execution = start.execution(new_execution_id(), approvals.approver)
            result, _ = await self.execute(
                sandbox, code, execution, timeout, limits=limits, cancelled_as=cancelled_as
            )
            return result
        return await self._in_rounds(sandbox, code, approvals.resume, start, timeout, limits)

    async def _in_rounds(
        self,
        sandbox: Sandbox,
        code: str,
        resume: Resume | None,
        start: ExecutionStart,
        timeout: float | None,
        limits: SandboxLimits | None,
    ) -> ExecutionResult | ApprovalNeeded:
        """One round of an execution on MCP 2026-07-28: the first, or the one `resume` starts."""
        journal_cap = self.config.approvals.max_state_bytes * JOURNAL_BYTES_PER_STATE_BYTE
        if resume is None:
            execution = start.execution(new_execution_id(), pause_for_approval)
            journal, round_number = HostJournal(max_bytes=journal_cap), 1
        else:
            try:
                paused = PausedExecution.load(resume.state)
                paused.check(code, sandbox.component_sha256)
                await self._spent_states.spend(paused.nonce)
            except (ResumeRefused, StateUnavailable) as exc:
                self._telemetry.approval_refused()
                refused = ExecutionResult(ok=False, error=ErrorInfo.from_exception(as_refusal(exc)))
                self.record(
                    start.execution(new_execution_id(), no_approver, reports=False),
                    code,
                    refused,
                    sandbox,
                    timeout,
                )
                return refused
            execution = start.execution(paused.execution_id, pause_for_approval)
            execution.answer = PausedCallAnswer(resume.answer, paused.shown_tool, paused.shown_digest)
            execution.began_at = paused.began_at
            execution.quota.restore(paused.quota)
            journal, round_number = paused.journal(journal_cap), paused.round + 1
        result, state = await self.execute(
            sandbox, code, execution, timeout, journal=journal, round_number=round_number, limits=limits
        )
        if execution.paused is None or state is None:
            return result
        return ApprovalNeeded(execution.paused.tool, execution.paused.arguments, state)

    async def execute(
        self,
        sandbox: Sandbox,
        code: str,
        execution: Execution,
        timeout: float | None,
        *,
        journal: HostJournal | None = None,
        round_number: int = 1,
        limits: SandboxLimits | None = None,
        cancelled_as: Callable[[], ExecutionFailed] = cancelled_error,
    ) -> tuple[ExecutionResult, str | None]:
        """The execution's result, and its state when it paused for approval (then its error says so)."""
        result: ExecutionResult | None = None
        state: str | None = None
        execution.span = self._telemetry.execution_started(execution.execution_id, round_number)
        try:
            result = redacted_result(
                self._redactor,
                await self._execute_with_progress(sandbox, code, execution, timeout, journal, limits),
            )
            if execution.paused is not None and journal is not None:
                try:
                    state = self._paused_state(
                        execution, execution.paused, round_number, code, sandbox, journal
                    )
                except ExecutionFailed as exc:  # over an approvals limit: the execution ends here
                    result = result.model_copy(update={"error": ErrorInfo.from_exception(exc)})
            return result, state
        finally:
            # Every execution gets its record: a cancelled one (or one the host failed) too.
            if result is None:
                error = sys.exc_info()[1]
                failure = cancelled_as() if isinstance(error, anyio.get_cancelled_exc_class()) else None
                result = _unfinished(
                    failure or GuestCrashed(f"the host failed: {type(error).__name__}"), execution
                )
            self.record(execution, code, result, sandbox, timeout, round_number, limits)

    def _paused_state(
        self,
        execution: Execution,
        paused_at: ApprovalRequired,
        round_number: int,
        code: str,
        sandbox: Sandbox,
        journal: HostJournal,
    ) -> str:
        """The state that resumes an execution which just paused, or ApprovalLimitExceeded."""
        approvals = self.config.approvals
        paused = paused_execution(
            execution.execution_id,
            execution.began_at,
            round_number,
            code,
            sandbox.component_sha256,
            journal,
            paused_at.tool,
            wire_digest(paused_at.arguments, paused_at.callee),
            execution.quota.counts(),
            approvals,
        )
        return paused.dump(approvals)

    def record(
        self,
        execution: Execution,
        code: str,
        result: ExecutionResult,
        sandbox: Sandbox,
        timeout: float | None,
        round_number: int = 1,
        limits: SandboxLimits | None = None,
    ) -> None:
        """Count the execution, and write its audit record when the config has an audit log."""
        self._telemetry.execution_finished(execution.span, execution.started, result, execution.calls)
        if self._audit is None:
            return
        self._audit.record(
            lambda audit: audit.execution(
                execution.execution_id,
                code,
                result,
                limits=limits or sandbox.limits,
                timeout=sandbox.timeout_for(timeout, limits),
                tool_calls=execution.calls,
                round_number=round_number,
                caller=execution.caller,
            )
        )

    async def _execute_with_progress(
        self,
        sandbox: Sandbox,
        code: str,
        execution: Execution,
        timeout: float | None,
        journal: HostJournal | None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        services = ExecutionServices(
            execution, self._tool_calls, self._resources, self.config.search.max_query_chars
        )
        run = partial(
            sandbox.execute,
            code,
            services=services,
            timeout=timeout,
            journal=journal,
            limits=limits,
            holder=execution.holder,
        )
        if execution.progress is None:
            return await run()
        results: list[ExecutionResult] = []
        async with anyio.create_task_group() as heartbeat:
            heartbeat.start_soon(execution.heartbeat)
            try:
                results.append(await run())
            finally:
                heartbeat.cancel_scope.cancel()
        return results[0]


def _unfinished(error: ExecutionFailed, execution: Execution) -> ExecutionResult:
    """What an execution that never returned a result looks like in the audit log."""
    ms = round((time.monotonic() - execution.started) * 1000, 3)
    return ExecutionResult(ok=False, error=ErrorInfo.from_exception(error), ms=ms)


def _withheld_whole(redactor: Redactor, result: ExecutionResult) -> ExecutionResult | None:
    """The result with every output withheld, when one of them holds a guessable secret; else None.

    Each output withheld alone told which of them held it: a snippet printing a third of a PIN's
    candidates to each of stdout, stderr and its value learned in which third the PIN was."""
    error = result.error
    outputs = [result.stdout, result.stderr, result.value_repr or ""]
    if error is not None:
        outputs += [error.message, error.traceback or ""]
    value = json.dumps(result.value, ensure_ascii=False, default=str) if result.value is not None else ""
    label = redactor.guessable_label(*outputs, value)
    if label is None:
        return None
    held = label.strip("[]").replace("REDACTED:", "the value of ")
    note = (
        f"[output withheld: it held {held}, a short secret, which is never shown, not even redacted in place]"
    )
    if error is not None:
        error = error.model_copy(update={"message": note, "traceback": None})
    calls = [
        call.model_copy(update={"tool": redactor.redact_text(call.tool, "tool name"), "message": None})
        for call in result.tool_calls
    ]
    return result.model_copy(
        update={
            "stdout": note if error is None else "",
            "stderr": "",
            "value": None,
            "value_repr": None,
            "error": error,
            "tool_calls": calls,
        }
    )


def redacted_result(redactor: Redactor, result: ExecutionResult) -> ExecutionResult:
    """A copy of an execution's result with secrets redacted from everything a client sees."""
    if not redactor:
        return result
    if (withheld := _withheld_whole(redactor, result)) is not None:
        return withheld
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
