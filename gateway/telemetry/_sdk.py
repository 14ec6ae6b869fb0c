"""The OpenTelemetry SDK, configured by the standard `OTEL_*` variables (the `otel` extra).

Importing this module fails without the extra; `_tracing` is the one place that imports it. The SDK
reads its own variables: the exporters their endpoint, headers, timeout and compression
(`OTEL_EXPORTER_OTLP_*`), the batch processor its delays (`OTEL_BSP_*`), the provider its sampler
(`OTEL_TRACES_SAMPLER`) and the resource its attributes (`OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`). Here only the choice of exporters is made, as the specification
describes `OTEL_TRACES_EXPORTER`, each one found under the entry point group the SDK's own
auto-configuration uses.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points

from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_SDK_DISABLED,
)
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from gateway.shared import PACKAGE_NAME, package_version

__all__ = ["exporter_names", "tracer_provider"]

EXPORTER_GROUP = "opentelemetry_traces_exporter"
# `otlp` is the specification's name for the protocol `OTEL_EXPORTER_OTLP_PROTOCOL` chooses, whose
# default is http/protobuf: the exporter the `otel` extra installs.
_OTLP_EXPORTERS = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}


def exporter_names() -> list[str]:
    """The exporters the environment asks for: `OTEL_TRACES_EXPORTER` (comma-separated, `none` for
    none); unset, OTLP when an OTLP endpoint is set, else none (no collector is assumed)."""
    if os.environ.get(OTEL_SDK_DISABLED, "").strip().lower() == "true":
        return []
    configured = os.environ.get(OTEL_TRACES_EXPORTER)
    if configured is None:
        endpoint = os.environ.get(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or os.environ.get(
            OTEL_EXPORTER_OTLP_ENDPOINT
        )
        return ["otlp"] if endpoint else []
    names = [name.strip() for name in configured.split(",")]
    return [name for name in dict.fromkeys(names) if name and name.lower() != "none"]


def tracer_provider() -> TracerProvider | None:
    """A provider exporting through the environment's exporters in batches; None when it names none.
    Raises ValueError for an exporter no installed package provides."""
    names = exporter_names()
    if not names:
        return None
    exporters = [_exporter(name) for name in names]
    provider = TracerProvider(resource=_resource())  # its sampler and limits from the environment
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _exporter(name: str) -> SpanExporter:
    """The exporter an `OTEL_TRACES_EXPORTER` name stands for, configured by its own variables."""
    if name == "console":  # on stderr: stdout is the MCP channel when serving over stdio
        return ConsoleSpanExporter(out=sys.stderr)
    plugin = name
    if name == "otlp":
        protocol = (
            os.environ.get(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
            or os.environ.get(OTEL_EXPORTER_OTLP_PROTOCOL)
            or "http/protobuf"
        ).strip()
        if protocol not in _OTLP_EXPORTERS:
            raise ValueError(
                f"OTLP protocol {protocol!r} is not supported (OTEL_EXPORTER_OTLP_PROTOCOL): use "
                "http/protobuf, or grpc with opentelemetry-exporter-otlp-proto-grpc installed"
            )
        plugin = _OTLP_EXPORTERS[protocol]
    found = entry_points(group=EXPORTER_GROUP, name=plugin)
    if not found:
        installed = ", ".join(sorted(ep.name for ep in entry_points(group=EXPORTER_GROUP))) or "none"
        raise ValueError(
            f"{OTEL_TRACES_EXPORTER} names {name!r}, which no installed package provides "
            f"(installed: {installed}; `otlp` is OTLP over {', '.join(_OTLP_EXPORTERS)})"
        )
    exporter: object = next(iter(found)).load()()
    if not isinstance(exporter, SpanExporter):
        raise ValueError(f"{OTEL_TRACES_EXPORTER} names {name!r}, which is not a span exporter")
    return exporter


def _resource() -> Resource:
    """The environment's resource, naming this service unless the environment names it."""
    detected = Resource.create()
    service = str(detected.attributes.get(SERVICE_NAME, ""))
    if service.startswith("unknown_service"):  # the SDK's placeholder when nothing names the service
        detected = detected.merge(Resource({SERVICE_NAME: PACKAGE_NAME, SERVICE_VERSION: package_version()}))
    return detected
