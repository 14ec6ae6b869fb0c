"""What a reload finds changed between two configs, and what of it needs a restart."""

from __future__ import annotations

import sys
from typing import Any

from gateway.config import GatewayConfig, parse_config
from gateway.reload._diff import LIVE_SECTIONS, applicable, diff_configs

TINY: dict[str, Any] = {"command": sys.executable, "args": ["tiny.py"]}
OTHER: dict[str, Any] = {"command": sys.executable, "args": ["other.py"]}


def config(data: dict[str, Any], environ: dict[str, str] | None = None) -> GatewayConfig:
    return parse_config(data, "test", environ or {})


def test_the_same_config_twice_is_no_change() -> None:
    data = {"mcpServers": {"a": TINY}, "policy": {"deny": ["a.echo"]}, "expose": ["a.echo"]}
    diff = diff_configs(config(data), config(data))
    assert not diff
    assert diff.servers == {"added": [], "removed": [], "changed": []}
    assert diff.sections == []
    assert diff.restart_needed == []


def test_servers_added_removed_and_changed_are_named_in_config_order() -> None:
    old = config({"mcpServers": {"keep": TINY, "gone": TINY, "edit": TINY}})
    new = config({"mcpServers": {"new2": OTHER, "keep": TINY, "edit": OTHER, "new1": TINY}})
    diff = diff_configs(old, new)
    assert diff.added == ["new2", "new1"]
    assert diff.removed == ["gone"]
    assert diff.changed == ["edit"]
    assert diff.sections == ["mcpServers"]
    assert diff.restart_needed == []


def test_a_changed_environment_value_behind_a_variable_changes_the_server() -> None:
    entry = {**TINY, "env": {"TOKEN": "${TOKEN}"}}
    old = config({"mcpServers": {"a": entry}}, {"TOKEN": "first-token-value"})
    new = config({"mcpServers": {"a": entry}}, {"TOKEN": "second-token-value"})
    assert diff_configs(old, new).changed == ["a"]


def test_a_server_that_becomes_unavailable_is_changed_and_one_that_is_disabled_is_removed() -> None:
    entry = {**TINY, "env": {"TOKEN": "${TOKEN}"}}
    old = config({"mcpServers": {"a": entry, "b": TINY}}, {"TOKEN": "some-token-value"})
    new = config({"mcpServers": {"a": entry, "b": {**TINY, "disabled": True}}}, {})
    diff = diff_configs(old, new)
    assert diff.changed == ["a"]
    assert diff.removed == ["b"]


def test_policy_limits_and_expose_apply_live_and_the_listener_auth_and_audit_need_a_restart() -> None:
    old = config({"mcpServers": {"a": TINY}})
    new = config(
        {
            "mcpServers": {"a": TINY},
            "policy": {"deny": ["a.die"]},
            "expose": ["a.echo"],
            "max_concurrent_calls": 3,
            "http": {"port": 9999},
            "audit": {"path": "audit.jsonl"},
            "sandbox": {"timeout_seconds": 5},
        }
    )
    diff = diff_configs(old, new)
    assert set(diff.sections) == {"policy", "expose", "max_concurrent_calls", "http", "audit", "sandbox"}
    assert set(diff.restart_needed) == {"http", "audit"}
    assert not set(diff.restart_needed) & LIVE_SECTIONS


def test_the_config_in_force_keeps_the_old_values_of_what_needs_a_restart() -> None:
    old = config({"mcpServers": {"a": TINY}, "http": {"port": 8123}})
    new = config({"mcpServers": {"b": TINY}, "http": {"port": 9999}, "policy": {"deny": ["b.die"]}})
    in_force = applicable(old, new, diff_configs(old, new))
    assert in_force.http == old.http
    assert list(in_force.mcp_servers) == ["b"]
    assert in_force.policy == new.policy


def test_the_config_in_force_keeps_where_the_new_one_was_read_from() -> None:
    old = config({"mcpServers": {"a": TINY}, "http": {"port": 8123}})
    new = parse_config(
        {"mcpServers": {"a": {**TINY, "env": {"T": "${T}"}}}, "http": {"port": 1}},
        "test",
        {"T": "a-secret-value"},
    )
    in_force = applicable(old, new, diff_configs(old, new))
    assert in_force.secret_names == {"a-secret-value": "T"}


def test_static_tokens_apply_at_once_and_an_issuer_or_auth_itself_needs_a_restart() -> None:
    environ = {"ALICE": "a" * 40, "BOB": "b" * 40}
    both = {"auth": {"tokens": {"alice": "${ALICE}", "bob": "${BOB}"}}}
    alice = {"auth": {"tokens": {"alice": "${ALICE}"}}}
    issuer = {
        "oauth": {
            "issuer": "https://id.example.com",
            "audience": "https://gw.example.com/mcp",
            "jwks_uri": "https://id.example.com/jwks",
        }
    }
    assert diff_configs(config(both, environ), config(alice, environ)).restart_needed == []
    with_issuer = {"auth": {**alice["auth"], **issuer}}
    assert diff_configs(config(both, environ), config(with_issuer, environ)).restart_needed == ["auth"]
    assert diff_configs(config({}, environ), config(alice, environ)).restart_needed == ["auth"]
