"""What the gateway reports of its work: where an outcome is known, one call here moves the metrics
and ends the span together, so the two never disagree on what happened."""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Protocol

import anyio
from opentelemetry.trace import Span, TracerProvider

from gateway.errors import ChildUnavailable, ExecutionFailed, PolicyDenied, QuotaExceeded, ToolCallError
from gateway.telemetry._metrics import GatewayMetrics
from gateway.telemetry._tracing import Tracing, current_span

__all__ = ["ExecutionOutcome", "Telemetry", "ToolNames", "call_outcome", "execution_outcome"]


class _Failure(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def category(self) -> str: ...


class ToolNames(Protocol):
    """A resolved tool's names (`catalog.CatalogEntry` has them)."""

    @property
    def server_name(self) -> str: ...
    @property
    def tool_name(self) -> str: ...
    @property
    def qualified(self) -> str: ...


class ExecutionOutcome(Protocol):
    """What is read of an execution's result (`sandbox.ExecutionResult` has it)."""

    @property
    def ok(self) -> bool: ...
    @property
    def error(self) -> _Failure | None: ...


def execution_outcome(result: ExecutionOutcome) -> str:
    """`ok`, or the category of the error that ended the execution."""
    if result.ok:
        return "ok"
    return result.error.category if result.error is not None else "crash"


def call_outcome(failure: BaseException | None, *, tool_error: bool = False) -> str:
    """One tool call's outcome, from what ended it (`tool_error`: the child answered with isError)."""
    if failure is None:
        return "ok"
    if tool_error:
        return "tool_error"  # the semantic conventions' `error.type` for an isError answer
    for kind, outcome in _REFUSALS:
        if isinstance(failure, kind):
            return outcome
    if isinstance(failure, ToolCallError):
        return "error"  # an unknown tool, bad arguments, the child's own error
    if isinstance(failure, ExecutionFailed):
        return failure.category  # the run ended at this call: pending (approval), denied (a secret)
    if isinstance(failure, anyio.get_cancelled_exc_class()):
        return "cancelled"  # by the client, the run's end, or a timeout around the call
    return "crash"


_REFUSALS: tuple[tuple[type[ToolCallError], str], ...] = (
    (PolicyDenied, "denied"),
    (QuotaExceeded, "quota"),
    (ChildUnavailable, "unavailable"),
)


def _error_type(failure: BaseException | None, outcome: str) -> str | None:
    if failure is None or outcome == "tool_error":
        return None if failure is None else outcome
    return failure.kind if isinstance(failure, ToolCallError) else type(failure).__name__


class Telemetry:
    """One gateway's metrics (its own Prometheus registry) and its spans (on `tracer_provider`, by
    default the process's global one, which `traces_from_environment` installs)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.metrics = GatewayMetrics()
        self.tracing = Tracing(tracer_provider)

    def execution_started(self, execution_id: str, round_number: int = 1) -> Span:
        """The execution's span, parent of its tool calls' spans."""
        return self.tracing.start_execution(execution_id, round_number)

    def execution_finished(
        self, span: Span | None, started: float, result: ExecutionOutcome, tool_calls: int
    ) -> None:
        """Count an execution that began at `started` (monotonic) and end its span, if it has one."""
        outcome = execution_outcome(result)
        self.metrics.executions.labels(outcome).inc()
        self.metrics.execution_seconds.labels(outcome).observe(max(time.monotonic() - started, 0.0))
        if span is not None:
            error_type = result.error.type if result.error is not None else None
            self.tracing.end_execution(span, outcome, error_type, tool_calls)

    def tool_call_started(
        self, execution: Span | None, execution_id: str, method: str = "tools/call"
    ) -> Span:
        """A tool call's span (or a resource request's: `method`), a child of its execution's span (else
        of the current one)."""
        return self.tracing.start_tool_call(execution, execution_id, method)

    @contextmanager
    def calling(self, span: Span | None) -> Generator[None]:
        """While the child is called: the tool call's span is the current one, so the trace context
        sent to the child (`_meta.traceparent`, the HTTP header) descends from it."""
        # An invalid span (no SDK, and no trace context from the client) has no context to send.
        if span is None or not span.get_span_context().is_valid:
            yield
            return
        with current_span(span):
            yield

    def tool_call_finished(
        self,
        span: Span | None,
        started: float,
        failure: BaseException | None,
        tool: ToolNames | None,
        approval: str = "not_required",
        tool_error: bool = False,
    ) -> None:
        """Count a tool call that began at `started` (monotonic), its approval if one was asked, and end
        its span. `tool` is the tool its name resolved to, if it did; `tool_error`: the child answered
        with isError."""
        outcome = call_outcome(failure, tool_error=tool_error)
        server = tool.server_name if tool is not None else ""
        self.metrics.tool_call_seconds.labels(server, outcome).observe(max(time.monotonic() - started, 0.0))
        if approval != "not_required":
            self.metrics.approvals.labels(approval).inc()
        if span is not None:
            names = (tool.server_name, tool.tool_name, tool.qualified) if tool is not None else None
            self.tracing.end_tool_call(span, names, outcome, _error_type(failure, outcome), approval)

    def config_reloaded(self, outcome: str) -> None:
        """Count a config reload by its outcome (applied, unchanged, refused)."""
        self.metrics.reloads.labels(outcome).inc()

    def token_refused(self, reason: str) -> None:
        """Count a bearer token refused over HTTP, by the reason its log line names (`wrong audience`
        is counted as `wrong_audience`)."""
        self.metrics.token_refusals.labels(reason.replace(" ", "_")).inc()

    def approval_refused(self) -> None:
        """Count a retry whose approval state was refused (expired, tampered with, used)."""
        self.metrics.approvals.labels("refused").inc()
