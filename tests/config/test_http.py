"""The `http` section: safe defaults (loopback, rebinding protection), and the binds it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import ConfigError
from gateway.config import parse_config
from gateway.config.server import HttpConfig


def http(section: dict[str, Any]) -> HttpConfig:
    config = parse_config({"http": section}, "team.json", {})
    assert config.http is not None
    return config.http


def refusal(section: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as refused:
        parse_config({"http": section}, "team.json", {})
    return str(refused.value)


def test_without_an_http_section_the_gateway_serves_stdio() -> None:
    assert parse_config({}, "team.json", {}).http is None


def test_the_defaults_bind_loopback_and_accept_only_loopback_hosts_and_origins() -> None:
    defaults = http({})
    assert (defaults.host, defaults.port, defaults.path) == ("127.0.0.1", 8080, "/mcp")
    assert defaults.hosts() == ["127.0.0.1:*", "127.0.0.1", "localhost:*", "localhost"]
    assert defaults.origins() == [
        "http://127.0.0.1:*",
        "http://127.0.0.1",
        "http://localhost:*",
        "http://localhost",
    ]
    assert http({"host": "::1"}).hosts() == ["[::1]:*", "[::1]", "localhost:*", "localhost"]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "gateway.internal"])
def test_a_non_loopback_bind_without_auth_is_refused_saying_what_to_configure(host: str) -> None:
    message = refusal({"host": host})
    assert f"http: host {host} is not a loopback address" in message
    assert "the config has no `auth` section" in message
    assert "http.allow_remote" in message


def test_a_config_that_authenticates_its_clients_may_bind_a_remote_address() -> None:
    tokens = {"alice": "${ALICE_TOKEN}"}
    environ = {"ALICE_TOKEN": "a" * 40}
    config = parse_config({"http": {"host": "10.1.2.3"}, "auth": {"tokens": tokens}}, "team.json", environ)
    assert config.http is not None
    assert config.http.host == "10.1.2.3"


def test_allow_remote_binds_an_address_and_accepts_it_as_the_host() -> None:
    remote = http({"host": "10.1.2.3", "allow_remote": True})
    assert remote.hosts() == ["10.1.2.3:*", "10.1.2.3"]


def test_binding_every_interface_needs_the_names_clients_use() -> None:
    message = refusal({"host": "0.0.0.0", "allow_remote": True})
    assert "list the names clients reach the gateway by in allowed_hosts" in message
    chosen = http({"host": "0.0.0.0", "allow_remote": True, "allowed_hosts": ["mcp.internal:8080"]})
    assert chosen.hosts() == ["mcp.internal:8080"]
    assert chosen.origins() == ["http://mcp.internal:8080"]


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"path": "/readyz"}, "path /readyz is a health probe's"),
        ({"path": "mcp"}, "http.path: String should match pattern"),
        ({"port": 70000}, "http.port: Input should be less than or equal to 65535"),
        ({"max_body_bytes": 10}, "http.max_body_bytes: Input should be greater than or equal to 65536"),
        (
            {"max_executions_in_flight": 2, "max_executions_in_flight_per_caller": 3},
            "max_executions_in_flight_per_caller (3) is above max_executions_in_flight (2)",
        ),
        ({"max_session": 3}, 'http.max_session: unknown key "max_session"; did you mean "max_sessions"?'),
        (
            {"max_requests_in_flight_per_caller": 7},
            "max_requests_in_flight_per_caller (7) is below max_executions_in_flight_per_caller + "
            "max_executions_queued_per_caller (8)",
        ),
        ({"header_timeout_seconds": 0}, "http.header_timeout_seconds: Input should be greater than 0"),
        ({"max_connections_per_address": 0}, "http.max_connections_per_address: Input should be greater"),
        (
            {"max_sessions": 4, "max_sessions_per_caller": 5},
            "max_sessions_per_caller (5) is above max_sessions (4)",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_key(section: dict[str, Any], expected: str) -> None:
    assert expected in refusal(section)


def test_mcp_may_not_take_the_metrics_path_unless_metrics_are_left_out() -> None:
    assert "path /metrics is where metrics are served" in refusal({"path": "/metrics"})
    assert http({}).metrics is True
    assert http({"path": "/metrics", "metrics": False}).path == "/metrics"


def test_a_callers_requests_in_flight_default_to_its_execution_caps_plus_room_for_its_streams() -> None:
    assert http({}).requests_in_flight_per_caller() == 4 + 4 + 8
    raised = {"max_executions_in_flight_per_caller": 16, "max_executions_queued_per_caller": 64}
    assert http(raised).requests_in_flight_per_caller() == 16 + 64 + 8
    assert http({"max_requests_in_flight_per_caller": 9}).requests_in_flight_per_caller() == 9


def test_slow_clients_are_bounded_by_default() -> None:
    defaults = http({})
    assert defaults.header_timeout_seconds == 10
    assert defaults.body_timeout_seconds == 30
    assert defaults.max_connections_per_address == 64


def test_each_caller_may_hold_a_quarter_of_the_sessions_unless_the_config_says() -> None:
    assert http({}).sessions_per_caller() == 25
    assert http({"max_sessions": 8}).sessions_per_caller() == 2
    assert http({"max_sessions": 1}).sessions_per_caller() == 1
    assert http({"max_sessions": 8, "max_sessions_per_caller": 8}).sessions_per_caller() == 8
