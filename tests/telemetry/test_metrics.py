"""The gateway's Prometheus metrics, moved by real executions in process: a real child over stdio, the
real sandbox, each outcome reached the way a snippet reaches it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from gateway.calls import Inline, InRounds
from gateway.calls._gateway import Gateway
from gateway.calls._resume import ApprovalNeeded, Resume
from gateway.config import parse_config
from gateway.policy import ApprovalOutcome
from gateway.telemetry import Telemetry
from gateway.telemetry._metrics import EXECUTION_BUCKETS, TOOL_CALL_BUCKETS, GatewayMetrics
from tests.e2e.gateway_process import python_child
from tests.real_servers import RESOURCE_SERVER, TRACE_SERVER

pytestmark = pytest.mark.anyio

WAIT = 60  # a real child starts in seconds; this bounds a hang
TRACE = python_child(TRACE_SERVER)
RESOURCES = python_child(RESOURCE_SERVER)


@asynccontextmanager
async def gateway_on(config: dict[str, Any]) -> AsyncIterator[Gateway]:
    # No search is measured here: the semantic model would only add its load to every gateway.
    async with Gateway(parse_config({"search": {"semantic": "off"}} | config, "test")) as gateway:
        yield gateway


def value(metrics: GatewayMetrics, name: str, **labels: str) -> float:
    """A sample's value, 0 when it was never recorded."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def run(gateway: Gateway, code: str) -> str:
    """Run `code`; its outcome as the metrics label it (ok or the error's category)."""
    with anyio.fail_after(WAIT):
        result = await gateway.execute_code(code)
    return "ok" if result.error is None else result.error.category


def bucket_bounds(metrics: GatewayMetrics, histogram: str) -> list[float]:
    """The upper bounds of a histogram's buckets, as its `outcome="ok"` series has them."""
    return [
        float(sample.labels["le"])
        for family in metrics.registry.collect()
        if family.name == histogram
        for sample in family.samples
        if sample.name.endswith("_bucket") and sample.labels["outcome"] == "ok"
    ]


async def test_executions_are_counted_and_timed_by_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACE_TOKEN", "s3cret-token-value-0123456789")
    config = {
        "mcpServers": {"trace": {**TRACE, "env": {"TOKEN": "${TRACE_TOKEN}"}}},
        "sandbox": {"max_tool_calls": 1},
    }
    async with gateway_on(config) as gateway:
        outcomes = [
            await run(gateway, "tools.trace.trace_context()['transport']"),
            await run(gateway, "1 / 0"),
            await run(gateway, "tools.trace.trace_context()\ntools.trace.trace_context()"),
            await run(gateway, "tools.trace.trace_context(note='s3cret-token-value-0123456789')"),
        ]
        metrics, calls = gateway.telemetry.metrics, "codemode_tool_call_duration_seconds_count"
        made = value(metrics, calls, server="trace", outcome="ok")
        sleeping = "tools.trace.trace_context()\nimport time\ntime.sleep(25)"
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as running:
                running.start_soon(gateway.execute_code, sleeping)
                while value(metrics, calls, server="trace", outcome="ok") == made:  # noqa: ASYNC110
                    await anyio.sleep(0.02)
                running.cancel_scope.cancel()  # the client gives up while the snippet sleeps
    assert outcomes == ["ok", "snippet", "limit", "denied"]
    metrics = gateway.telemetry.metrics
    for outcome in ("ok", "snippet", "limit", "denied", "cancelled"):
        assert value(metrics, "codemode_executions_total", outcome=outcome) == 1, outcome
        assert value(metrics, "codemode_execution_duration_seconds_count", outcome=outcome) == 1, outcome
        # Every observation lands in the last bucket; the first ones hold only the fast ones.
        inf = value(metrics, "codemode_execution_duration_seconds_bucket", outcome=outcome, le="+Inf")
        assert inf == 1
    assert value(metrics, "codemode_executions_total", outcome="crash") == 0
    assert bucket_bounds(metrics, "codemode_execution_duration_seconds") == [*EXECUTION_BUCKETS, float("inf")]


async def test_tool_calls_are_timed_per_child_server_and_outcome() -> None:
    config = {"mcpServers": {"trace": TRACE}, "policy": {"deny": ["trace.fail"]}}
    async with gateway_on(config) as gateway:
        await run(gateway, "tools.trace.trace_context()")
        await run(gateway, "tools.trace.trace_context()")
        await run(gateway, "tools.trace.fail()")  # denied: refused before it reaches the child
        # A name built at run time (the precheck refuses one written out): it resolves to no tool.
        await run(gateway, "getattr(tools.trace, 'no_such' + '_tool')()")
    async with gateway_on({"mcpServers": {"trace": TRACE}}) as other:
        await run(other, "tools.trace.fail()")  # allowed here: the child answers isError
    metrics, seconds = gateway.telemetry.metrics, "codemode_tool_call_duration_seconds_count"
    assert value(metrics, seconds, server="trace", outcome="ok") == 2
    assert value(metrics, seconds, server="trace", outcome="denied") == 1
    assert value(metrics, seconds, server="", outcome="error") == 1
    assert value(metrics, seconds, server="trace", outcome="tool_error") == 0
    # Each gateway keeps its own registry: the other's call is counted there alone.
    assert value(other.telemetry.metrics, seconds, server="trace", outcome="tool_error") == 1
    assert value(other.telemetry.metrics, seconds, server="trace", outcome="ok") == 0
    assert bucket_bounds(metrics, "codemode_tool_call_duration_seconds") == [*TOOL_CALL_BUCKETS, float("inf")]


async def test_resource_reads_are_measured_as_tool_calls_by_server_and_outcome() -> None:
    config = {"mcpServers": {"res": RESOURCES}, "policy": {"deny": ["res:secret://*"]}}
    async with gateway_on(config) as gateway:
        await run(gateway, "resources.res.list()")
        await run(gateway, "resources.res.read('note://readme')")
        await run(gateway, "resources.res.read('secret://token')")  # denied by the policy
    metrics, seconds = gateway.telemetry.metrics, "codemode_tool_call_duration_seconds_count"
    assert value(metrics, seconds, server="res", outcome="ok") == 2
    assert value(metrics, seconds, server="res", outcome="denied") == 1


async def test_approvals_are_counted_by_outcome_on_both_protocol_eras(
    npm_server: Callable[[str], dict[str, Any]],
) -> None:
    # Any child whose tool an approval can guard will do: a Node one starts for less CPU than a Python one.
    everything = npm_server("@modelcontextprotocol/server-everything")
    config = {"mcpServers": {"everything": everything}, "policy": {"approve": ["everything.echo"]}}
    code = "tools.everything.echo(message='approved')"

    def answering(outcome: ApprovalOutcome) -> Any:
        async def approver(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
            return outcome

        return approver

    async with gateway_on(config) as gateway:
        with anyio.fail_after(WAIT):
            approved = await gateway.execute_code(code, approvals=Inline(answering("approved")))
            declined = await gateway.execute_code(code, approvals=Inline(answering("declined")))
            unasked = await gateway.execute_code(code)  # no way to ask the user
            paused = await gateway.execute_code(code, None, InRounds())
            assert isinstance(paused, ApprovalNeeded)
            resumed = await gateway.execute_code(code, None, InRounds(Resume(paused.state, "approved")))
            reused = await gateway.execute_code(code, None, InRounds(Resume(paused.state, "approved")))
    assert approved.value == "Echo: approved"
    assert declined.error is not None
    assert unasked.error is not None
    assert not isinstance(resumed, ApprovalNeeded)
    assert resumed.value == "Echo: approved"
    assert not isinstance(reused, ApprovalNeeded)
    assert reused.error is not None
    metrics = gateway.telemetry.metrics
    counts = {
        outcome: value(metrics, "codemode_approvals_total", outcome=outcome)
        for outcome in ("approved", "declined", "unavailable", "pending", "refused")
    }
    assert counts == {"approved": 2, "declined": 1, "unavailable": 1, "pending": 1, "refused": 1}
    assert value(metrics, "codemode_executions_total", outcome="pending") == 1


async def test_the_childrens_states_and_the_sandbox_slots_are_read_when_scraped(
    npm_server: Callable[[str], dict[str, Any]],
) -> None:
    # Any child that connects will do: a Node one starts for a fraction of a Python one's CPU.
    ready = npm_server("@modelcontextprotocol/server-everything")
    config = {
        "mcpServers": {"ready": ready, "broken": {"command": "/nonexistent/mcp-server"}},
        "sandbox": {"max_concurrent_executions": 2},
    }
    async with gateway_on(config) as gateway:
        await run(gateway, "1")  # the children have settled and the sandbox has loaded
        metrics = gateway.telemetry.metrics
        states = {
            (server, state): value(metrics, "codemode_child_state", server=server, state=state)
            for server in ("ready", "broken")
            for state in ("idle", "connecting", "ready", "reconnecting", "failed")
        }
        slots = value(metrics, "codemode_sandbox_slots")
        busy = value(metrics, "codemode_sandbox_slots_busy")
        text, content_type = metrics.exposition()
    assert {key for key, on in states.items() if on} == {("ready", "ready"), ("broken", "failed")}
    assert slots == 2
    assert busy == 0
    assert content_type.startswith("text/plain")
    assert b"# TYPE codemode_child_state gauge" in text
    assert b"codemode_http_executions_queued" not in text  # no HTTP admission in process


async def test_a_slot_is_busy_while_its_snippet_runs_and_free_once_it_ends(
    npm_server: Callable[[str], dict[str, Any]],
) -> None:
    everything = npm_server("@modelcontextprotocol/server-everything")
    config = {"mcpServers": {"everything": everything}, "policy": {"approve": ["everything.echo"]}}
    seen: list[float] = []

    async def approver(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
        # Asked while the snippet waits in its slot for the answer.
        seen.append(value(gateway.telemetry.metrics, "codemode_sandbox_slots_busy"))
        return "approved"

    async with gateway_on(config) as gateway:
        with anyio.fail_after(WAIT):
            result = await gateway.execute_code(
                "tools.everything.echo(message='x')", approvals=Inline(approver)
            )
        after = value(gateway.telemetry.metrics, "codemode_sandbox_slots_busy")
    assert result.ok, result.error
    assert seen == [1]
    assert after == 0


def test_telemetry_of_two_gateways_never_share_a_registry() -> None:
    one, two = Telemetry(), Telemetry()
    one.approval_refused()
    assert value(one.metrics, "codemode_approvals_total", outcome="refused") == 1
    assert value(two.metrics, "codemode_approvals_total", outcome="refused") == 0


def test_refused_tokens_are_counted_by_the_reason_the_log_names_in_one_word() -> None:
    telemetry = Telemetry()
    for reason in ("unknown token", "wrong audience", "unknown token"):
        telemetry.token_refused(reason)
    metrics = telemetry.metrics
    assert value(metrics, "codemode_http_token_refusals_total", reason="unknown_token") == 2
    assert value(metrics, "codemode_http_token_refusals_total", reason="wrong_audience") == 1
