"""OpenTelemetry spans from a real gateway in process, into an in-memory exporter: one per execution,
one per tool call under it (side by side too), and the trace context each real child receives."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode, TraceFlags

from gateway.audit import read_audit
from gateway.calls._gateway import Gateway
from gateway.config import parse_config
from gateway.errors import ConfigError
from gateway.telemetry import Telemetry, _tracing, traces_from_environment
from tests.e2e.gateway_process import python_child
from tests.real_servers import RESOURCE_SERVER, TRACE_SERVER, built, serve_asgi_app

pytestmark = pytest.mark.anyio

WAIT = 60
TRACE = python_child(TRACE_SERVER)
RESOURCES = python_child(RESOURCE_SERVER)


@asynccontextmanager
async def traced_gateway(
    config: dict[str, Any], tmp_path: Path
) -> AsyncIterator[tuple[Gateway, InMemorySpanExporter]]:
    """A gateway whose spans go to memory (a provider of its own: the process's global one is untouched)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = {**config, "audit": {"path": str(tmp_path / "audit.jsonl")}}
    async with Gateway(parse_config(config, "test"), Telemetry(provider)) as gateway:
        yield gateway, exporter


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def traceparent_of(span: ReadableSpan) -> str:
    """The W3C traceparent naming `span` as the parent (sampled, with the random trace-id flag)."""
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


Traced = tuple[Gateway, InMemorySpanExporter, Path]  # the gateway, its spans, its audit log


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one traced gateway serves the tests that need no config of their own."""
    return "asyncio"


@pytest.fixture(scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Traced]:
    """A traced gateway of the trace and resource servers, denying trace.fail."""
    directory = tmp_path_factory.mktemp("traced")
    config = {"mcpServers": {"trace": TRACE, "res": RESOURCES}, "policy": {"deny": ["trace.fail"]}}
    async with traced_gateway(config, directory) as (gateway, exporter):
        yield gateway, exporter, directory / "audit.jsonl"


@pytest.fixture
def traced(shared: Traced) -> Traced:
    """The shared traced gateway, its exporter emptied of the spans earlier tests left."""
    shared[1].clear()
    return shared


async def test_an_execution_has_one_span_and_each_tool_call_a_child_span_of_it(traced: Traced) -> None:
    snippet = (
        "import asyncio\n"
        "first = tools.trace.trace_context()\n"
        "both = await asyncio.gather(tools.trace.trace_context(), tools.trace.trace_context())\n"
        "len(both)"
    )
    gateway, exporter, audit = traced
    with anyio.fail_after(WAIT):
        result = await gateway.execute_code(snippet)
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    [execution] = named(spans, "execute_tool execute_code")
    calls = named(spans, "execute_tool trace.trace_context")
    assert len(calls) == 3  # the one awaited alone and the two made side by side
    context = execution.get_span_context()
    assert context is not None
    assert execution.attributes is not None
    execution_id = execution.attributes["codemode.execution_id"]
    for call in calls:
        call_context = call.get_span_context()
        assert call_context is not None
        assert call_context.trace_id == context.trace_id
        assert parent_of(call) == context.span_id  # explicitly, though they start from the worker thread
        assert call.attributes is not None
        assert dict(call.attributes) == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "trace_context",
            "mcp.method.name": "tools/call",
            "codemode.server.name": "trace",
            "codemode.tool": "trace.trace_context",
            "codemode.execution_id": execution_id,
            "codemode.outcome": "ok",
        }
        assert call.status.status_code is StatusCode.UNSET
    executions = [r["execution_id"] for r in read_audit(audit).records if r["kind"] == "execution"]
    assert executions.count(execution_id) == 1
    assert execution.attributes["gen_ai.operation.name"] == "execute_tool"
    assert execution.attributes["gen_ai.tool.name"] == "execute_code"
    assert execution.attributes["codemode.outcome"] == "ok"
    assert execution.attributes["codemode.tool_calls"] == 3
    assert parent_of(execution) is None  # no MCP request around it here: a root


async def test_a_resource_list_and_read_each_get_a_span_under_the_execution_like_a_tool_call(
    traced: Traced,
) -> None:
    snippet = "listed = resources.res.list()\nresources.res.read('note://readme')"
    gateway, exporter, _ = traced
    with anyio.fail_after(WAIT):
        result = await gateway.execute_code(snippet)
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    [execution] = named(spans, "execute_tool execute_code")
    [listing] = named(spans, "execute_tool res:resources/list")
    [read] = named(spans, "execute_tool res:note://readme")
    context = execution.get_span_context()
    assert context is not None
    for span, method in ((listing, "resources/list"), (read, "resources/read")):
        assert parent_of(span) == context.span_id
        assert span.attributes is not None
        assert span.attributes["mcp.method.name"] == method
        assert span.attributes["codemode.server.name"] == "res"
        assert span.attributes["codemode.outcome"] == "ok"
    assert execution.attributes is not None
    assert execution.attributes["codemode.tool_calls"] == 2


async def test_a_refused_call_and_a_failed_run_end_their_spans_as_errors_naming_only_the_class(
    traced: Traced,
) -> None:
    snippet = (
        "try:\n    tools.trace.fail()\nexcept ToolError:\n    pass\ngetattr(tools.trace, 'made' + '_up')()\n"
    )
    gateway, exporter, _ = traced  # its policy denies trace.fail
    with anyio.fail_after(WAIT):
        result = await gateway.execute_code(snippet)
    assert result.error is not None
    spans = exporter.get_finished_spans()
    [denied] = named(spans, "execute_tool trace.fail")
    assert denied.attributes is not None
    assert denied.attributes["codemode.outcome"] == "denied"
    assert denied.attributes["error.type"] == "PolicyDenied"
    assert denied.status.status_code is StatusCode.ERROR
    assert denied.status.description == "PolicyDenied"  # never the message, which may quote arguments
    # A name that resolved to no tool: the span says so, without the name the snippet wrote.
    [unknown] = named(spans, "execute_tool")
    assert unknown.attributes is not None
    assert unknown.attributes["codemode.outcome"] == "error"
    assert "codemode.tool" not in unknown.attributes
    assert "gen_ai.tool.name" not in unknown.attributes
    assert not any("made_up" in str(value) for span in spans for value in (span.attributes or {}).values())
    [execution] = named(spans, "execute_tool execute_code")
    assert execution.attributes is not None
    assert execution.attributes["codemode.outcome"] == "snippet"
    assert execution.attributes["error.type"] == "ToolError"
    assert execution.status.status_code is StatusCode.ERROR


async def test_each_child_gets_the_trace_context_of_its_call_in_meta_and_an_http_child_as_a_header(
    tmp_path: Path,
) -> None:
    build = built(TRACE_SERVER)
    async with serve_asgi_app(build().streamable_http_app()) as (port, _):
        config = {
            "mcpServers": {
                "remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
                "local": TRACE,
            }
        }
        async with traced_gateway(config, tmp_path) as (gateway, exporter):
            with anyio.fail_after(WAIT):
                result = await gateway.execute_code(
                    "[tools.remote.trace_context(), tools.local.trace_context()]"
                )
    assert result.ok, result.error
    remote, local = result.value
    spans = exporter.get_finished_spans()
    [remote_call] = named(spans, "execute_tool remote.trace_context")
    [local_call] = named(spans, "execute_tool local.trace_context")
    # The SDK's global tracer is not configured in this process: the context the child gets names the
    # gateway's tool-call span itself (with the SDK configured, its client span under it).
    assert remote["meta"] == traceparent_of(remote_call)
    assert remote["header"] == remote["meta"]
    assert remote["transport"] == "http"
    assert local["meta"] == traceparent_of(local_call)
    assert local["header"] is None
    assert local["transport"] == "stdio"


async def test_with_no_sdk_the_trace_context_a_run_began_under_still_reaches_the_child() -> None:
    # The process's global provider, with no SDK configured: every span is a no-op that carries its
    # parent's context, if it has one.
    remote = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    config = parse_config({"mcpServers": {"local": TRACE}}, "test")
    async with Gateway(config) as gateway:
        with anyio.fail_after(WAIT):
            with trace.use_span(NonRecordingSpan(remote)):
                carried = await gateway.execute_code("tools.local.trace_context()")
            alone = await gateway.execute_code("tools.local.trace_context()")
    assert carried.ok, carried.error
    assert alone.ok, alone.error
    assert carried.value["meta"].split("-")[1] == f"{remote.trace_id:032x}"
    assert alone.value["meta"] is None


def test_without_the_otel_extra_the_variables_are_named_in_a_warning_and_nothing_is_exported(
    monkeypatch: pytest.MonkeyPatch, telemetry_log: list[logging.LogRecord]
) -> None:
    monkeypatch.setattr(_tracing, "_sdk_module", lambda: None)  # as if the SDK were not installed
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    with traces_from_environment() as exporting:
        assert exporting is False
    [warning] = telemetry_log
    assert "the otel extra is not installed" in warning.getMessage()
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in warning.__dict__["variables"]
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)  # the global one left alone


def test_with_no_otel_variables_nothing_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    with traces_from_environment() as exporting:
        assert exporting is False
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)


def test_an_exporter_that_cannot_be_made_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "no_such_exporter")
    refusal = "tracing: OTEL_TRACES_EXPORTER names 'no_such_exporter'"
    with pytest.raises(ConfigError, match=refusal), traces_from_environment():
        pass
