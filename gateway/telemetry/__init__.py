"""What the gateway reports of its work: Prometheus metrics in a registry per gateway, and
OpenTelemetry spans exported as the standard `OTEL_*` variables say (the `otel` extra)."""

from gateway.telemetry._metrics import SlotUsage
from gateway.telemetry._telemetry import Telemetry
from gateway.telemetry._tracing import (
    TraceSpan,
    check_traces_environment,
    inject_trace_headers,
    traces_from_environment,
)

__all__ = (
    "SlotUsage",
    "Telemetry",
    "TraceSpan",
    "check_traces_environment",
    "inject_trace_headers",
    "traces_from_environment",
)
