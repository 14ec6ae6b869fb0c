"""OpenTelemetry spans: one per execution, one per tool call under it, and the W3C trace context
carried to children.

Spans go through the OpenTelemetry API, which the MCP SDK already depends on: without an SDK
configured they are no-ops (a trace context a client sent still passes through to the children).
`traces_from_environment` installs the SDK, configured by the standard `OTEL_*` variables, when the
`otel` extra is installed; `_sdk` is the one module that imports it, and this the one place that
guards that import.

A tool call's span names its parent explicitly (the execution's span, which the core's `Execution` carries):
tool calls start on the event loop from the sandbox's worker thread, and no ambient context is
relied on across that hop. While the child is called, the tool call's span is the current one, so
that the SDK's own client span, and the `traceparent` it writes into the request's `params._meta`
(SEP-414), descend from it; `inject_trace_headers` copies the same context into the HTTP headers
of a request to an HTTP child.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import httpx2
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from gateway.errors import ConfigError
from gateway.shared import PACKAGE_NAME, package_version

__all__ = [
    "TraceSpan",
    "Tracing",
    "check_traces_environment",
    "inject_trace_headers",
    "traces_from_environment",
]

log = logging.getLogger("gateway.telemetry")

TraceSpan = Span
"""A span, as the pipeline carries it (the OpenTelemetry API's type)."""

# Semantic conventions (GenAI and MCP, both still "development"): docs/observability.md lists them.
OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
METHOD = "mcp.method.name"
ERROR_TYPE = "error.type"
EXECUTE_TOOL = "execute_tool"
# The gateway's own, under its own prefix rather than inside a namespace the conventions own.
EXECUTION_ID = "codemode.execution_id"
ROUND = "codemode.round"
SERVER = "codemode.server.name"
QUALIFIED = "codemode.tool"
OUTCOME = "codemode.outcome"
APPROVAL = "codemode.approval"
TOOL_CALLS = "codemode.tool_calls"


class Tracing:
    """Starts and ends the gateway's spans on a tracer provider (the global one by default)."""

    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        # Without a provider, a proxy to the global one, so the SDK installed later still takes effect.
        self._tracer = trace.get_tracer(PACKAGE_NAME, package_version(), tracer_provider=provider)

    def start_execution(self, execution_id: str, round_number: int) -> Span:
        """The span of one execution (one round of one), under the current span if any (the MCP
        server span of the `tools/call execute_code` request)."""
        return self._tracer.start_span(
            f"{EXECUTE_TOOL} execute_code",
            kind=SpanKind.INTERNAL,
            attributes={
                OPERATION: EXECUTE_TOOL,
                TOOL_NAME: "execute_code",
                EXECUTION_ID: execution_id,
                ROUND: round_number,
            },
        )

    def end_execution(self, span: Span, outcome: str, error_type: str | None, tool_calls: int) -> None:
        span.set_attributes({OUTCOME: outcome, TOOL_CALLS: tool_calls})
        _set_error(span, outcome, error_type)
        span.end()

    def start_tool_call(self, parent: Span | None, execution_id: str, method: str = "tools/call") -> Span:
        """The span of one tool call (or resource request: `method`), a child of `parent` (its
        execution's span), else of the current one."""
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            EXECUTE_TOOL,  # named for its tool once the name has resolved to one (`end_tool_call`)
            context=context,
            kind=SpanKind.INTERNAL,
            attributes={OPERATION: EXECUTE_TOOL, METHOD: method, EXECUTION_ID: execution_id},
        )

    def end_tool_call(
        self,
        span: Span,
        tool: tuple[str, str, str] | None,
        outcome: str,
        error_type: str | None,
        approval: str,
    ) -> None:
        """`tool` is (server, the child's tool name, the name the snippet used) once resolved; a name
        that resolved to no tool is left out, since a snippet can write anything there."""
        if tool is not None:
            server, name, qualified = tool
            span.update_name(f"{EXECUTE_TOOL} {qualified}")
            span.set_attributes({SERVER: server, TOOL_NAME: name, QUALIFIED: qualified})
        span.set_attribute(OUTCOME, outcome)
        if approval != "not_required":
            span.set_attribute(APPROVAL, approval)
        _set_error(span, outcome, error_type)
        span.end()


@contextmanager
def current_span(span: Span) -> Generator[None]:
    """Make `span` the current one while inside (it is ended elsewhere)."""
    with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        yield


def _set_error(span: Span, outcome: str, error_type: str | None) -> None:
    # Only the class of the error: its message may quote arguments or a child's answer.
    if outcome in ("ok", "pending"):  # a run paused for approval has not failed
        return
    span.set_attribute(ERROR_TYPE, error_type or outcome)
    span.set_status(Status(StatusCode.ERROR, error_type or outcome))


async def inject_trace_headers(request: httpx2.Request) -> None:
    """An httpx request hook: the current trace context as W3C headers (`traceparent`, `tracestate`).

    The SDK's streamable HTTP transport sends each message in the context its sender had, so for a
    tool call this is the context whose `traceparent` the SDK also wrote into `params._meta`."""
    propagate.inject(request.headers)


def _sdk_module() -> ModuleType | None:
    """`_sdk` (the `otel` extra), or None without it: spans then stay no-ops, the gateway works as ever."""
    try:
        from gateway.telemetry import _sdk  # imported only when a variable asks: the SDK is slow to import
    except ImportError:
        return None
    return _sdk


def _provider_from_environment() -> tuple[ModuleType, Any] | None:
    """`_sdk` and the tracer provider the `OTEL_*` variables describe, its exporters built; None when
    they ask for none, or without the otel extra (warned). Raises ConfigError for a bad exporter."""
    named = sorted(name for name in os.environ if name.startswith("OTEL_"))
    sdk = _sdk_module() if named else None  # with no variable set, nothing is exported
    if sdk is None:
        if named:
            log.warning(
                "OTEL_* variables are set but the otel extra is not installed: no traces are exported",
                extra={"variables": named, "install": f"pip install '{PACKAGE_NAME}[otel]'"},
            )
        return None
    try:
        provider = sdk.tracer_provider()
    except ValueError as exc:
        raise ConfigError(f"tracing: {exc}") from None
    return None if provider is None else (sdk, provider)


def check_traces_environment() -> None:
    """Raise the ConfigError `traces_from_environment` would, exporting nothing (for `check`)."""
    built = _provider_from_environment()
    if built is not None:
        built[1].shutdown()


@contextmanager
def traces_from_environment() -> Generator[bool]:
    """Export spans as the standard `OTEL_*` variables say while inside, and flush them on the way out;
    yields whether spans are exported. Installs the process's global tracer provider (once)."""
    built = _provider_from_environment()
    if built is None:
        yield False
        return
    sdk, provider = built
    trace.set_tracer_provider(provider)
    log.info("exporting traces", extra={"exporters": sdk.exporter_names()})
    try:
        yield True
    finally:
        provider.shutdown()  # flushes the spans still batched
