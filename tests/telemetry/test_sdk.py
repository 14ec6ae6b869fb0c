"""The OpenTelemetry SDK configured by the standard OTEL_* variables alone: which exporters, and none
unless asked (the process's global provider is never touched here)."""

from __future__ import annotations

import pytest

from gateway.telemetry import _sdk

OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_nothing_is_exported_unless_an_exporter_or_an_otlp_endpoint_is_named() -> None:
    assert _sdk.exporter_names() == []
    assert _sdk.tracer_provider() is None


@pytest.mark.parametrize(
    ("variables", "names"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console, otlp,console"}, ["console", "otlp"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, []),
    ],
)
def test_the_exporters_are_the_ones_the_variables_name(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], names: list[str]
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert _sdk.exporter_names() == names


def test_an_exporter_no_installed_package_provides_is_refused_naming_those_that_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin_json")
    with pytest.raises(ValueError, match="'zipkin_json', which no installed package provides") as raised:
        _sdk.tracer_provider()
    assert "otlp_proto_http" in str(raised.value)


def test_otlp_over_a_protocol_python_does_not_export_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(ValueError, match="OTLP protocol 'http/json' is not supported"):
        _sdk.tracer_provider()


def test_the_console_exporter_writes_to_stderr_since_stdout_may_be_the_mcp_channel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    provider = _sdk.tracer_provider()
    assert provider is not None
    provider.get_tracer("test").start_span("a span to see").end()
    provider.shutdown()
    out, err = capsys.readouterr()
    assert out == ""
    assert '"name": "a span to see"' in err
    assert '"service.name": "codemode-gateway"' in err  # named, as no variable names the service


def test_a_service_name_from_the_environment_is_kept(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-gateway")
    provider = _sdk.tracer_provider()
    assert provider is not None
    provider.get_tracer("test").start_span("named").end()
    provider.shutdown()
    assert '"service.name": "team-gateway"' in capsys.readouterr().err
