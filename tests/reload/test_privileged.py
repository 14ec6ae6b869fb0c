"""Which changes of a reload only an operator may apply: anything that runs other host code, widens
what a snippet may reach, or changes who may call; removing, narrowing and lowering are not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gateway.catalog.lockfile import ToolLock
from gateway.config import GatewayConfig, parse_config
from gateway.reload._diff import diff_configs
from gateway.reload._privileged import lock_widenings, privileged_changes

TINY: dict[str, Any] = {"command": sys.executable, "args": ["tiny.py"]}
DIGESTS = {"description": "a" * 64}


def config(data: dict[str, Any], environ: dict[str, str] | None = None) -> GatewayConfig:
    return parse_config(data, "test", environ or {})


def privileged(old: dict[str, Any], new: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    before, after = config(old, environ), config(new, environ)
    return privileged_changes(before, after, diff_configs(before, after))


def lock(servers: dict[str, dict[str, dict[str, str]]]) -> ToolLock:
    return ToolLock(Path("team.lock.json"), Path("team.json"), servers)


def test_a_server_added_with_a_secret_in_its_env_is_privileged_and_the_secret_is_not_named() -> None:
    lint = {"command": "/bin/sh", "args": ["-c", "echo"], "env": {"LEAK": "${RT_SECRET}"}}
    changes = privileged(
        {"mcpServers": {"a": TINY}},
        {"mcpServers": {"a": TINY, "lint": lint}},
        {"RT_SECRET": "hunter2-secret-value"},
    )
    assert changes == ["mcpServers.lint: added"]


def test_any_change_to_an_existing_server_names_the_keys_that_changed() -> None:
    changed = {**TINY, "args": ["other.py"], "env": {"X": "1"}}
    changes = privileged({"mcpServers": {"a": TINY}}, {"mcpServers": {"a": changed}})
    assert changes == ["mcpServers.a: changed (args, env)"]


def test_removing_or_disabling_a_server_is_not_privileged() -> None:
    old = {"mcpServers": {"a": TINY, "b": TINY, "c": TINY}}
    new = {"mcpServers": {"a": TINY, "c": {**TINY, "disabled": True}}}
    assert privileged(old, new) == []


def test_a_server_that_becomes_unavailable_stops_and_is_not_privileged() -> None:
    entry = {**TINY, "env": {"TOKEN": "${TOKEN}"}}
    before = config({"mcpServers": {"a": entry}}, {"TOKEN": "some-token-value"})
    after = config({"mcpServers": {"a": entry}}, {})
    assert privileged_changes(before, after, diff_configs(before, after)) == []


def test_rules_added_to_deny_hidden_and_approve_narrow_and_removed_ones_widen() -> None:
    servers = {"a": TINY}
    old = {"mcpServers": servers, "policy": {"deny": ["a.x"], "hidden": [], "approve": []}}
    narrower = {
        "mcpServers": servers,
        "policy": {"deny": ["a.x", "a.y"], "hidden": ["a.z"], "approve": ["a.w"]},
    }
    assert privileged(old, narrower) == []
    assert privileged(old, {"mcpServers": servers}) == ["policy.deny: 'a.x' removed"]


def test_rules_removed_with_the_only_server_they_name_widen_nothing() -> None:
    policy = {
        "deny": ["a.x", "b.*"],
        "hidden": ["b.secret", "b:file://*"],
        "approve": ["b.write"],
        "tools": {"b.write": {"max_calls": 1}},
    }
    old = {"mcpServers": {"a": TINY, "b": TINY}, "policy": policy}
    assert privileged(old, {"mcpServers": {"a": TINY}, "policy": {"deny": ["a.x"]}}) == []


def test_a_wildcard_rule_removed_with_a_server_widens_while_it_could_match_a_server_left() -> None:
    old = {
        "mcpServers": {"github": TINY, "gitlab": TINY, "jira": TINY},
        "policy": {"deny": ["git*", "*.delete"]},
    }
    left = {"mcpServers": {"gitlab": TINY, "jira": TINY}}
    assert privileged(old, left) == ["policy.deny: 'git*' removed", "policy.deny: '*.delete' removed"]
    only_jira = {"mcpServers": {"jira": TINY}, "policy": {"deny": ["*.delete"]}}
    assert privileged(old, only_jira) == []  # no server left starts with git


def test_of_rules_removed_together_only_those_that_could_match_a_kept_server_widen() -> None:
    old = {"mcpServers": {"a": TINY, "b": TINY}, "policy": {"deny": ["a.x", "b.x", "[ab].y", "?.z"]}}
    assert privileged(old, {"mcpServers": {"a": TINY}}) == [
        "policy.deny: 'a.x' removed",
        "policy.deny: '[ab].y' removed",
        "policy.deny: '?.z' removed",
    ]


def test_a_rule_removed_with_its_server_widens_if_the_change_adds_a_server_it_could_match() -> None:
    old = {
        "mcpServers": {"a": TINY, "b": TINY},
        "policy": {"deny": ["b*"], "tools": {"c.x": {"max_calls": 1, "optional": True}}},
    }
    new = {"mcpServers": {"a": TINY, "b2": TINY, "c": TINY}}
    assert privileged(old, new) == [
        "mcpServers.b2: added",
        "mcpServers.c: added",
        "policy.deny: 'b*' removed",
        "policy.tools.c.x: removed",
    ]


def test_a_rule_naming_a_server_by_its_python_name_or_one_left_out_still_restricts_it() -> None:
    servers = {"brave-search": TINY, "class": TINY, "gh": {**TINY, "env": {"TOKEN": "${GH_TOKEN}"}}}
    rules = ["brave_search.*", {"pattern": "class_.*", "optional": True}, "gh.*"]  # `class` is `class_`
    old = {"mcpServers": servers, "policy": {"deny": rules}}
    assert privileged(old, {"mcpServers": servers}) == [
        "policy.deny: 'brave_search.*' removed",
        "policy.deny: 'class_.*' removed",
        "policy.deny: 'gh.*' removed",  # left out (GH_TOKEN is not set), but a reload may bring it in
    ]
    brave = {"mcpServers": {"brave-search": TINY}, "policy": {"deny": ["brave_search.*"]}}
    assert privileged(old, brave) == []  # `class` and `gh` taken out with their rules


def test_a_rule_made_optional_counts_as_removed_since_an_optional_rule_blocks_nothing() -> None:
    servers = {"a": TINY}
    old = {"mcpServers": servers, "policy": {"deny": ["a.x"]}}
    new = {"mcpServers": servers, "policy": {"deny": [{"pattern": "a.x", "optional": True}]}}
    assert privileged(old, new) == ["policy.deny: 'a.x' removed"]


def test_rules_added_to_allow_widen_unless_every_tool_was_allowed_already() -> None:
    servers = {"a": TINY}
    old = {"mcpServers": servers, "policy": {"allow": ["a.echo"]}}
    assert privileged(old, {"mcpServers": servers, "policy": {"allow": ["a.echo", "a.die"]}}) == [
        "policy.allow: 'a.die' added"
    ]
    assert privileged(old, {"mcpServers": servers, "policy": {"allow": []}}) == []
    assert privileged({"mcpServers": servers}, old) == []  # from the default ["*"]


def test_read_only_turned_off_and_a_raised_call_cap_widen_and_the_reverse_narrows() -> None:
    servers = {"a": TINY}
    strict = {"mcpServers": servers, "policy": {"read_only": True, "max_tool_calls": 5}}
    loose = {"mcpServers": servers, "policy": {"read_only": False, "max_tool_calls": 10}}
    assert privileged(loose, strict) == []
    assert privileged(strict, loose) == [
        "policy.read_only: turned off",
        "policy.max_tool_calls: raised from 5 to 10",
    ]


def test_a_tool_entry_added_narrows_and_one_removed_or_loosened_widens() -> None:
    servers = {"a": TINY}
    none: dict[str, Any] = {"mcpServers": servers}
    capped = {"mcpServers": servers, "policy": {"tools": {"a.echo": {"max_calls": 2}}}}
    looser = {"mcpServers": servers, "policy": {"tools": {"a.echo": {"max_calls": 3}}}}
    assert privileged(none, capped) == []
    assert privileged(capped, none) == ["policy.tools.a.echo: removed"]
    assert privileged(capped, looser) == ["policy.tools.a.echo.max_calls: raised from 2 to 3"]


def test_any_change_to_roles_is_privileged() -> None:
    servers = {"a": TINY}
    role = {"principals": ["ci"], "deny": ["a.die"]}
    assert privileged(
        {"mcpServers": servers}, {"mcpServers": servers, "policy": {"roles": {"ci": role}}}
    ) == ["policy.roles: changed"]


def test_limits_may_be_lowered_but_not_raised() -> None:
    old = {"sandbox": {"fuel": 10**10, "max_tool_calls": 50}, "max_concurrent_calls": 8}
    lower = {"sandbox": {"fuel": 10**9, "max_tool_calls": 5}, "max_concurrent_calls": 4}
    assert privileged(old, lower) == []
    assert privileged(lower, old) == [
        "max_concurrent_calls: raised from 4 to 8",
        "sandbox.fuel: raised from 1000000000 to 10000000000",
        "sandbox.max_tool_calls: raised from 5 to 50",
    ]


def test_host_code_callers_records_and_exposure_are_privileged_whole() -> None:
    new = {
        "middleware": ["tests.middleware.team_hooks:rewrite_entries"],
        "audit": {"path": "elsewhere.jsonl"},
        "http": {"max_sessions": 5},
        "expose": [],
        "restart": {"max_attempts": 1},
    }
    assert sorted(privileged({}, new)) == [
        "audit: changed",
        "http: changed",
        "middleware: changed",
        "restart: changed",
    ]


def test_a_lockfile_removed_or_admitting_a_tool_widens_and_one_holding_back_more_does_not() -> None:
    reviewed = lock({"a": {"echo": DIGESTS}})
    assert lock_widenings(reviewed, None) == ["lockfile: removed (every tool would be admitted unreviewed)"]
    assert lock_widenings(None, reviewed) == []
    assert lock_widenings(reviewed, lock({})) == []
    assert lock_widenings(reviewed, lock({"a": {"echo": DIGESTS, "die": DIGESTS}})) == [
        "lockfile: admits a.die (new or changed digests)"
    ]
    assert lock_widenings(reviewed, lock({"a": {"echo": {"description": "b" * 64}}})) == [
        "lockfile: admits a.echo (new or changed digests)"
    ]


def test_a_static_token_added_changed_or_removed_is_privileged_each_named_by_its_principal() -> None:
    tokens = {"ALICE": "a" * 40, "BOB": "b" * 40, "CAROL": "c" * 40, "OTHER": "o" * 40}
    both = {"auth": {"tokens": {"alice": "${ALICE}", "bob": "${BOB}"}}}
    assert privileged(both, {"auth": {"tokens": {"alice": "${ALICE}"}}}, tokens) == [
        "auth.tokens.bob: removed"
    ]
    widened = {"auth": {"tokens": {"alice": "${OTHER}", "bob": "${BOB}", "carol": "${CAROL}"}}}
    assert privileged(both, widened, tokens) == ["auth.tokens.alice: changed", "auth.tokens.carol: added"]
    issuer = {
        "issuer": "https://id.example.com",
        "audience": "https://gw.example.com/mcp",
        "jwks_uri": "https://id.example.com/jwks",
    }
    assert privileged(both, {"auth": {**both["auth"], "oauth": issuer}}, tokens) == ["auth: changed"]
