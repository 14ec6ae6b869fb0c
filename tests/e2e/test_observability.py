"""Metrics and traces from the real gateway process: `/metrics` on `serve --http` as a scraper reads
it, and spans exported over OTLP/HTTP to a receiver on loopback, configured by OTEL_* variables alone,
with the trace context reaching real children (over HTTP and stdio)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Receive, Scope, Send

from gateway.audit import read_audit
from tests.e2e.gateway_http import http_client, http_gateway
from tests.e2e.gateway_process import WAIT, environment, execute, python_child, write_config
from tests.e2e.http_children import http_children
from tests.real_servers import TRACE_SERVER, built, serve_asgi_app

pytestmark = pytest.mark.anyio

TRACE = python_child(TRACE_SERVER)
TOKEN = "scraper-test-token-" + "t" * 40


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


async def get(url: str, **headers: str) -> httpx2.Response:
    with anyio.fail_after(WAIT):
        async with httpx2.AsyncClient() as http:
            return await http.get(url, headers=headers)


@pytest.fixture
async def over_http() -> AsyncIterator[dict[str, Any]]:
    """The trace server as `trace` and as `local`, served over HTTP from this process, for the tests
    whose point is not the child's transport (a child process costs about a CPU-second)."""
    build = built(TRACE_SERVER)
    async with http_children({"trace": build, "local": build}) as children:
        yield children


async def test_metrics_are_served_open_beside_the_probes_and_count_what_the_gateway_did(
    tmp_path: Path, over_http: dict[str, Any]
) -> None:
    config = write_config(
        tmp_path,
        {
            "mcpServers": {"trace": over_http["trace"]},
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}"}},  # MCP needs a token; a scraper has none
        },
    )
    async with http_gateway(config, env=environment({"ALICE_TOKEN": TOKEN})) as gateway:
        async with http_client(gateway.url, "auto", token=TOKEN) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool("execute_code", {"code": "tools.trace.trace_context()"})
                assert not result.is_error
                # A retry whose approval state the SDK's boundary cannot accept (forged, or expired).
                with pytest.raises(MCPError, match="Invalid or expired requestState"):
                    await client.call_tool("execute_code", {"code": "1"}, request_state="forged")
        unauthenticated = await get(gateway.url)
        scraped = await get(f"{gateway.base}/metrics")
        open_metrics = await get(f"{gateway.base}/metrics", accept="application/openmetrics-text")
    assert unauthenticated.status_code == 401
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    found = samples(scraped.text)
    assert sample(found, "codemode_executions_total", outcome="ok") == 1
    assert sample(found, "codemode_execution_duration_seconds_count", outcome="ok") == 1
    assert sample(found, "codemode_tool_call_duration_seconds_count", server="trace", outcome="ok") == 1
    assert sample(found, "codemode_approvals_total", outcome="refused") == 1
    assert sample(found, "codemode_child_state", server="trace", state="ready") == 1
    assert sample(found, "codemode_child_state", server="trace", state="failed") == 0
    assert sample(found, "codemode_http_executions_in_flight") == 0
    assert sample(found, "codemode_http_executions_queued") == 0
    assert sample(found, "codemode_sandbox_slots") >= 1
    assert sample(found, "codemode_sandbox_slots_busy") == 0
    assert sample(found, "process_resident_memory_bytes") > 0
    assert "alice" not in scraped.text  # no caller is named
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")


async def test_metrics_can_be_left_out(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {}, "http": {"metrics": False}})
    async with http_gateway(config) as gateway:
        scraped = await get(f"{gateway.base}/metrics")
        alive = await get(f"{gateway.base}/healthz")
    assert scraped.status_code == 404
    assert alive.status_code == 200


@dataclass
class Receiver:
    """An OTLP/HTTP trace receiver: every span POSTed to /v1/traces, decoded."""

    spans: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    arrived: anyio.Event = field(default_factory=anyio.Event)
    content_types: set[str] = field(default_factory=set[str])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan: nothing to start
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status = 404
        if scope["path"] == "/v1/traces" and scope["method"] == "POST":
            status = 200
            headers = dict(scope["headers"])
            self.content_types.add(headers.get(b"content-type", b"").decode())
            self.spans.extend(_decoded(ExportTraceServiceRequest.FromString(body)))
            self.arrived.set()
            self.arrived = anyio.Event()
        kind = b"application/x-protobuf"
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": b""})  # an empty ExportTraceServiceResponse

    def named(self, name: str) -> list[dict[str, Any]]:
        return [span for span in self.spans if span["name"] == name]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def _decoded(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for resource in request.resource_spans:
        service = {a.key: _value(a.value) for a in resource.resource.attributes}.get("service.name")
        for scope in resource.scope_spans:
            for span in scope.spans:
                spans.append(
                    {
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex() or None,
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                        "service": service,
                        "scope": scope.scope.name,
                    }
                )
    return spans


@asynccontextmanager
async def stdio_gateway(config: Path, env: dict[str, str], stderr: Path) -> AsyncIterator[ClientSession]:
    """`codemode-gateway serve` over stdio, its stderr kept in a file; it exits when the session ends. A
    fresh interpreter, not `gateway_args`' fork: a test's site directory on PYTHONPATH decides its imports."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway", "--log-level", "INFO", "serve", "--config", str(config)],
        env=env,
    )
    with stderr.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(WAIT):
                await client.initialize()
            yield client


async def test_spans_reach_an_otlp_receiver_and_the_trace_context_reaches_every_child(
    tmp_path: Path,
) -> None:
    receiver = Receiver()
    build = built(TRACE_SERVER)
    async with (
        serve_asgi_app(receiver) as (otlp_port, _),
        serve_asgi_app(build().streamable_http_app()) as (child_port, _),
    ):
        config = write_config(
            tmp_path,
            {
                "mcpServers": {
                    "remote": {"type": "http", "url": f"http://127.0.0.1:{child_port}/mcp"},
                    "local": TRACE,
                },
                "audit": {"path": str(tmp_path / "audit.jsonl")},
            },
        )
        env = environment(
            {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{otlp_port}",
                "OTEL_BSP_SCHEDULE_DELAY": "50",  # milliseconds: spans leave while the test waits
                "OTEL_SERVICE_NAME": "gateway-under-test",
            }
        )
        async with stdio_gateway(config, env, tmp_path / "stderr.log") as client:
            outcome = await execute(client, "[tools.remote.trace_context(), tools.local.trace_context()]")
        # The session closed: the gateway exited, flushing what was still batched.
        with anyio.fail_after(WAIT):
            while not receiver.named("execute_tool execute_code"):
                await receiver.arrived.wait()
    assert outcome["ok"], outcome
    remote, local = outcome["value"]
    assert receiver.content_types == {"application/x-protobuf"}
    [execution] = receiver.named("execute_tool execute_code")
    [server_span] = receiver.named("tools/call execute_code")  # the SDK's span of the MCP request
    assert execution["parent"] == server_span["span_id"]
    assert execution["service"] == "gateway-under-test"
    [record] = [r for r in read_audit(tmp_path / "audit.jsonl").records if r["kind"] == "execution"]
    assert execution["attributes"]["codemode.execution_id"] == record["execution_id"]
    trace_id = execution["trace_id"]
    for child, answer in (("remote", remote), ("local", local)):
        [call] = receiver.named(f"execute_tool {child}.trace_context")
        assert call["parent"] == execution["span_id"]
        assert call["trace_id"] == trace_id
        assert call["attributes"]["codemode.server.name"] == child
        assert call["attributes"]["gen_ai.tool.name"] == "trace_context"
        # The SDK's client span of the request to the child, under the tool call's span: the
        # traceparent the child received names it.
        [sent] = [
            s for s in receiver.named("MCP send tools/call trace_context") if s["parent"] == call["span_id"]
        ]
        _, sent_trace, sent_span, _ = answer["meta"].split("-")
        assert (sent_trace, sent_span) == (trace_id, sent["span_id"])
    assert remote["header"] == remote["meta"]  # over HTTP, as a W3C header too
    assert local["header"] is None  # stdio has no headers: `_meta` alone carries it


async def test_without_the_otel_extra_the_gateway_serves_unchanged_and_says_why_nothing_is_exported(
    tmp_path: Path, over_http: dict[str, Any]
) -> None:
    # A site hook that makes the SDK unimportable in the gateway process, as if the extra were absent.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules['opentelemetry.sdk'] = None\n", encoding="utf-8"
    )
    config = write_config(tmp_path, {"mcpServers": {"local": over_http["local"]}})
    env = environment({"PYTHONPATH": str(site), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    stderr = tmp_path / "stderr.log"
    async with stdio_gateway(config, env, stderr) as client:
        outcome = await execute(client, "tools.local.trace_context()")
    assert outcome["ok"], outcome
    assert outcome["value"]["meta"] is None  # no span, so no trace context to pass on
    log = stderr.read_text(encoding="utf-8")
    assert "the otel extra is not installed" in log
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in log
    with anyio.fail_after(WAIT):
        probe = await anyio.run_process(
            [sys.executable, "-c", "import opentelemetry.sdk"], env=env, check=False
        )
    assert probe.returncode != 0  # the hook did hide the SDK
