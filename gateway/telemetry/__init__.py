"""What the gateway reports of its work: Prometheus metrics in a registry per gateway, and
OpenTelemetry spans exported as the standard `OTEL_*` variables say (the `otel` extra)."""

from gateway.telemetry._metrics import (
    EXECUTION_BUCKETS,
    TOOL_CALL_BUCKETS,
    AdmissionState,
    ChildSnapshot,
    GatewayMetrics,
    SlotUsage,
)
from gateway.telemetry._telemetry import Telemetry, call_outcome, execution_outcome
from gateway.telemetry._tracing import TraceSpan, inject_trace_headers, traces_from_environment

__all__ = (
    "EXECUTION_BUCKETS",
    "TOOL_CALL_BUCKETS",
    "AdmissionState",
    "ChildSnapshot",
    "GatewayMetrics",
    "SlotUsage",
    "Telemetry",
    "TraceSpan",
    "call_outcome",
    "execution_outcome",
    "inject_trace_headers",
    "traces_from_environment",
)
