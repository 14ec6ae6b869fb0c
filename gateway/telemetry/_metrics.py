"""The gateway's Prometheus metrics, in a registry of its own (docs/observability.md lists them).

Counters and histograms move where outcomes are known (the tool-call pipeline's step 10, the
execution's record); gauges of state (children, sandbox slots, the HTTP admission queue) are read
from their owners when the registry is scraped, so nothing has to keep them up to date. A registry
per gateway, never the process-wide default: two gateways in one process (tests, embedders) count
apart, and a scrape shows exactly one gateway's figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

__all__ = [
    "EXECUTION_BUCKETS",
    "TOOL_CALL_BUCKETS",
    "AdmissionState",
    "ChildSnapshot",
    "GatewayMetrics",
    "SlotUsage",
]

EXECUTION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: a snippet without tool calls takes milliseconds; the default wall budget is 30 s, and a
call waiting for a person's approval can hold a run for minutes."""

TOOL_CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Seconds: a refusal takes microseconds, a local child milliseconds, a remote API seconds."""


class ChildSnapshot(Protocol):
    """What the gauge of children's states reads of each child (`children.ChildStatus` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...


class SlotUsage(Protocol):
    """The sandbox's execution slots, as `Sandbox.slot_usage` reports them."""

    @property
    def slots(self) -> int: ...
    @property
    def busy(self) -> int: ...
    @property
    def queued(self) -> int: ...


class AdmissionState(Protocol):
    """The HTTP admission's places (`server._admission.Admission` has them)."""

    @property
    def in_flight(self) -> int: ...
    @property
    def queued(self) -> int: ...


class _State:
    """A collector reading the gauges of state from their owners at each scrape."""

    def __init__(self) -> None:
        self.children: Callable[[], Iterable[ChildSnapshot]] | None = None
        self.child_states: Sequence[str] = ()
        self.sandbox: Callable[[], SlotUsage | None] | None = None
        self.admission: AdmissionState | None = None

    def collect(self) -> Iterator[Metric]:
        if self.children is not None:
            # Every state of every child, 1 for the one it is in: a state left out would read as "no
            # data" rather than 0, and alerts on `state="failed"` need the zeros too.
            states = GaugeMetricFamily(
                "codemode_child_state",
                "1 for the state each child server is in (idle, connecting, ready, reconnecting, "
                "failed), 0 for the others.",
                labels=["server", "state"],
            )
            for child in self.children():
                for state in self.child_states:
                    states.add_metric([child.name, state], 1.0 if child.state == state else 0.0)
            yield states
        usage = self.sandbox() if self.sandbox is not None else None
        if usage is not None:
            yield GaugeMetricFamily(
                "codemode_sandbox_slots", "Execution slots (sandbox.max_concurrent_executions).", usage.slots
            )
            yield GaugeMetricFamily(
                "codemode_sandbox_slots_busy", "Execution slots running a snippet now.", usage.busy
            )
            yield GaugeMetricFamily(
                "codemode_sandbox_executions_queued",
                "Executions waiting for a free slot, or for their caller's share of the slots "
                "(sandbox.max_queued_executions caps them).",
                usage.queued,
            )
        if self.admission is not None:
            yield GaugeMetricFamily(
                "codemode_http_executions_in_flight",
                "execute_code and exposed-tool calls holding an HTTP in-flight place "
                "(http.max_executions_in_flight).",
                self.admission.in_flight,
            )
            yield GaugeMetricFamily(
                "codemode_http_executions_queued",
                "Calls waiting for an HTTP in-flight place (http.max_executions_queued).",
                self.admission.queued,
            )


class GatewayMetrics:
    """One gateway's metrics and the registry that holds them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.executions = Counter(
            "codemode_executions",
            "Executions (execute_code runs, each round of one paused for approval) by outcome: ok, or the "
            "error's category (snippet, limit, denied, crash, cancelled, pending).",
            ["outcome"],
            registry=self.registry,
        )
        self.execution_seconds = Histogram(
            "codemode_execution_duration_seconds",
            "Wall time of an execution from its start (waiting for a sandbox slot included) to its result.",
            ["outcome"],
            buckets=EXECUTION_BUCKETS,
            registry=self.registry,
        )
        self.tool_call_seconds = Histogram(
            "codemode_tool_call_duration_seconds",
            "A snippet's (or an exposed tool's) tool call through the whole pipeline, refusals included, "
            'by child server ("" when the name matched none) and outcome.',
            ["server", "outcome"],
            buckets=TOOL_CALL_BUCKETS,
            registry=self.registry,
        )
        self.approvals = Counter(
            "codemode_approvals",
            "Approvals asked of a person (policy.approve) by outcome: approved, declined, unavailable "
            "(the client cannot ask), pending (a run paused to ask), refused (a retry's approval state "
            "was expired, tampered with, another caller's, or already used).",
            ["outcome"],
            registry=self.registry,
        )
        self.reloads = Counter(
            "codemode_config_reloads",
            "Config reloads (SIGHUP, a change to the file, `codemode-gateway reload`) by outcome: applied, "
            "unchanged, refused (the new config did not validate; the old one serves on).",
            ["outcome"],
            registry=self.registry,
        )
        self.token_refusals = Counter(
            "codemode_http_token_refusals",
            "Bearer tokens refused over HTTP with `auth`, by reason: the reason the warning logged for "
            "each names (unknown_token, expired, wrong_audience, wrong_issuer, unknown_signing_key...).",
            ["reason"],
            registry=self.registry,
        )
        self._state = _State()
        self.registry.register(self._state)
        ProcessCollector(registry=self.registry)  # the process's CPU, memory and open files

    def watch_children(self, children: Callable[[], Iterable[ChildSnapshot]], states: Iterable[str]) -> None:
        """Report each child's state at every scrape, among all of `states`."""
        self._state.children = children
        self._state.child_states = [str(state) for state in states]

    def watch_sandbox(self, usage: Callable[[], SlotUsage | None]) -> None:
        """Report the sandbox's slots at every scrape (None while it is loading)."""
        self._state.sandbox = usage

    def watch_admission(self, admission: AdmissionState) -> None:
        """Report the HTTP admission's places at every scrape."""
        self._state.admission = admission

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The registry in the format the scraper's Accept header asks for, and its content type."""
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type
