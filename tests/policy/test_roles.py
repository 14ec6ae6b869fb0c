"""Roles: who a role names, how its overlay meets the policy, and rate windows per caller."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway import PolicyDenied, QuotaExceeded
from gateway.auth import STATIC_ISSUER, Identity, Owner
from gateway.catalog import Catalog
from gateway.policy import Policies
from gateway.policy._roles import roles_of
from gateway.policy.config import PolicyConfig
from tests.policy.helpers import FakeClock, get, made_up_entry
from tests.real_servers import snapshot_catalog

BOB = Identity("bob", scopes=("mcp",), groups=("eng",))


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


def policies(clock: FakeClock | None = None, **config: Any) -> Policies:
    parsed = PolicyConfig.model_validate(config)
    return Policies(parsed, clock=clock) if clock is not None else Policies(parsed)


# ---- who a role names ---------------------------------------------------------------------------


def test_a_role_names_callers_by_principal_group_or_scope_in_the_configs_order() -> None:
    config = PolicyConfig.model_validate(
        {
            "roles": {
                "by-scope": {"scopes": ["contractor"]},
                "by-name": {"principals": ["bob"]},
                "by-group": {"groups": ["oncall"]},
            }
        }
    )
    assert roles_of(config, Identity("bob")) == ("by-name",)
    assert roles_of(config, Identity("carol", groups=("oncall", "eng"))) == ("by-group",)
    assert roles_of(config, Identity("dave", scopes=("contractor",), groups=("oncall",))) == (
        "by-scope",
        "by-group",
    )
    assert roles_of(config, Identity("erin", scopes=("bob",), groups=("contractor",))) == ()
    assert roles_of(config, None) == ()


def test_a_role_that_names_nobody_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match="names no caller"):
        PolicyConfig.model_validate({"roles": {"empty": {"deny": ["git.*"]}}})


def test_a_roles_approve_list_refuses_a_resource_rule_as_the_policys_does() -> None:
    with pytest.raises(ValidationError, match="resource rule"):
        PolicyConfig.model_validate({"roles": {"r": {"principals": ["bob"], "approve": ["git:repo://*"]}}})


# ---- the overlay --------------------------------------------------------------------------------


def test_a_caller_no_role_names_gets_the_policy_as_written(real: Catalog) -> None:
    rules = policies(roles={"contractor": {"principals": ["bob"], "deny": ["git.*"]}})
    assert rules.for_caller(None) is rules.base
    assert rules.for_caller(Identity("alice")) is rules.base
    assert rules.base.denial(get(real, "git.git_status")) is None
    assert rules.for_caller(BOB).denial(get(real, "git.git_status")) is not None


def test_a_roles_deny_refuses_the_call_naming_the_role(real: Catalog) -> None:
    rules = policies(roles={"contractor": {"principals": ["bob"], "deny": ["git.*"]}})
    with pytest.raises(PolicyDenied) as caught:
        rules.for_caller(BOB).check_access(get(real, "git.git_commit"))
    assert (
        str(caught.value) == 'git.git_commit is denied by policy (policy.roles["contractor"].deny: "git.*")'
    )


def test_a_roles_hidden_tools_vanish_for_its_callers_only(real: Catalog) -> None:
    rules = policies(roles={"contractor": {"principals": ["bob"], "hidden": ["memory.*"]}})
    entry = get(real, "memory.read_graph")
    assert not rules.for_caller(BOB).visible(entry)
    assert rules.for_caller(Identity("alice")).visible(entry)


def test_a_roles_read_only_replaces_the_policys_in_both_directions(real: Catalog) -> None:
    commit = get(real, "git.git_commit")  # not annotated read-only
    rules = policies(
        read_only=True,
        roles={
            "oncall": {"groups": ["oncall"], "read_only": False},
            "contractor": {"principals": ["bob"], "read_only": True},
        },
    )
    assert rules.base.denial(commit) is not None
    assert rules.for_caller(Identity("carol", groups=("oncall",))).denial(commit) is None
    denial = rules.for_caller(BOB).denial(commit)
    assert denial is not None
    assert denial.startswith('policy.roles["contractor"].read_only: it is not annotated read-only')


def test_of_two_roles_the_stricter_setting_wins(real: Catalog) -> None:
    rules = policies(
        roles={
            "oncall": {"groups": ["oncall"], "read_only": False, "max_tool_calls": 50},
            "contractor": {"principals": ["bob"], "read_only": True, "max_tool_calls": 5},
        }
    )
    both = rules.for_caller(Identity("bob", groups=("oncall",)))
    assert both.roles == ("oncall", "contractor")
    assert both.config.read_only is True
    assert both.config.max_tool_calls == 5
    assert both.denial(get(real, "git.git_commit")) is not None


def test_a_roles_allow_writes_widens_reach_under_read_only(real: Catalog) -> None:
    commit = get(real, "git.git_commit")
    rules = policies(
        read_only=True, roles={"oncall": {"groups": ["oncall"], "allow_writes": ["git.git_commit"]}}
    )
    assert rules.base.denial(commit) is not None
    assert rules.for_caller(Identity("carol", groups=("oncall",))).denial(commit) is None


def test_a_roles_approve_adds_to_the_policys(real: Catalog) -> None:
    rules = policies(
        approve=["git.git_commit"], roles={"oncall": {"groups": ["oncall"], "approve": ["git.*"]}}
    )
    carol = rules.for_caller(Identity("carol", groups=("oncall",)))
    assert carol.needs_approval(get(real, "git.git_status"))
    assert carol.needs_approval(get(real, "git.git_commit"))
    assert not rules.base.needs_approval(get(real, "git.git_status"))


@pytest.mark.anyio
async def test_a_roles_quota_is_named_in_the_refusal(real: Catalog) -> None:
    rules = policies(max_tool_calls=10, roles={"contractor": {"principals": ["bob"], "max_tool_calls": 1}})
    quota = rules.for_caller(BOB).new_execution(Owner(STATIC_ISSUER, "bob"))
    await quota.acquire(get(real, "time.get_current_time"))
    with pytest.raises(QuotaExceeded) as caught:
        await quota.acquire(get(real, "time.get_current_time"))
    assert caught.value.quota == 'policy.roles["contractor"].max_tool_calls'
    assert caught.value.limit == 1


def test_a_tool_two_roles_constrain_meets_both_constraints_and_the_lower_quota(real: Catalog) -> None:
    entry = made_up_entry("repo.search", {"query": {"type": "string"}, "limit": {"type": "integer"}})
    rules = policies(
        roles={
            "a": {
                "groups": ["a"],
                "tools": {"repo.search": {"args": {"properties": {"limit": {"maximum": 50}}}}},
            },
            "b": {
                "groups": ["b"],
                "tools": {
                    "repo.search": {"args": {"properties": {"query": {"maxLength": 5}}}, "max_calls": 2}
                },
            },
        }
    )
    both = rules.for_caller(Identity("x", groups=("a", "b")))
    both.check_arguments(entry, {"query": "abc", "limit": 10})
    with pytest.raises(PolicyDenied):
        both.check_arguments(entry, {"query": "abcdefgh", "limit": 10})
    with pytest.raises(PolicyDenied):
        both.check_arguments(entry, {"query": "abc", "limit": 500})
    assert both.config.tools["repo.search"].max_calls == 2


# ---- rates --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_rate_per_principal_gives_each_caller_its_own_window(real: Catalog) -> None:
    clock = FakeClock()
    rate = {"calls": 1, "per_seconds": 60, "per": "principal"}
    rules = policies(clock, tools={"time.get_current_time": {"rate": rate}})
    entry = get(real, "time.get_current_time")
    await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)
    await rules.base.new_execution(Owner(STATIC_ISSUER, "bob")).acquire(entry)  # a window of its own
    # A JWT whose `sub` is a static token's name is another caller, with a window of its own.
    await rules.base.new_execution(Owner("https://idp.example.com", "alice")).acquire(entry)
    with pytest.raises(QuotaExceeded) as caught:
        await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)
    assert "for each caller" in str(caught.value)
    clock.now += 61
    await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)


@pytest.mark.anyio
async def test_a_gateway_rate_counts_every_callers_calls_whatever_their_roles(real: Catalog) -> None:
    rate = {"calls": 2, "per_seconds": 60}
    rules = policies(
        tools={"time.get_current_time": {"rate": rate}},
        roles={"contractor": {"principals": ["bob"], "deny": ["git.*"]}},
    )
    entry = get(real, "time.get_current_time")
    await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)
    await rules.for_caller(BOB).new_execution(Owner(STATIC_ISSUER, "bob")).acquire(entry)
    with pytest.raises(QuotaExceeded) as caught:
        await rules.base.new_execution(Owner(STATIC_ISSUER, "carol")).acquire(entry)
    assert caught.value.quota == 'policy.tools["time.get_current_time"].rate'


@pytest.mark.anyio
async def test_a_rate_a_role_sets_is_named_in_the_refusal(real: Catalog) -> None:
    rate = {"calls": 1, "per_seconds": 60, "per": "principal"}
    rules = policies(
        roles={"contractor": {"principals": ["bob"], "tools": {"time.get_current_time": {"rate": rate}}}}
    )
    entry = get(real, "time.get_current_time")
    bob = rules.for_caller(BOB)
    await bob.new_execution(Owner(STATIC_ISSUER, "bob")).acquire(entry)
    with pytest.raises(QuotaExceeded) as caught:
        await bob.new_execution(Owner(STATIC_ISSUER, "bob")).acquire(entry)
    assert caught.value.quota == 'policy.roles["contractor"].tools["time.get_current_time"].rate'
    await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)  # no rate without the role
    await rules.base.new_execution(Owner(STATIC_ISSUER, "alice")).acquire(entry)


# ---- typos --------------------------------------------------------------------------------------


def test_a_roles_rule_that_matches_nothing_blocks_its_server_for_everyone(real: Catalog) -> None:
    rules = policies(roles={"contractor": {"principals": ["bob"], "deny": ["git.git_comit"]}})
    blocked = rules.base.unmatched(real)
    assert set(blocked) == {"git"}
    assert 'policy.roles["contractor"].deny[0] "git.git_comit" matches none of its tools' in blocked["git"]
    assert "did you mean git.git_commit" in blocked["git"]
