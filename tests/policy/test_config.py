"""The `policy` section as config: globs, tool names, constraints and quotas that are errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gateway.catalog import Catalog
from gateway.policy import Policy
from gateway.policy.config import PolicyConfig, PolicyRule, may_name_server
from tests.policy.helpers import get
from tests.real_servers import snapshot_catalog


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


# ---- config validation --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_default_policy_allows_and_shows_everything(real: Catalog) -> None:
    policy = Policy()
    assert all(policy.visible(e) and policy.denial(e) is None for e in real)
    assert not any(policy.needs_approval(e) for e in real)
    quota = policy.new_execution()
    for _ in range(1000):
        await quota.acquire(get(real, "everything.get_sum"))


def test_the_example_config_of_the_issue_validates() -> None:
    config = PolicyConfig.model_validate(
        {
            "read_only": False,
            "allow_writes": ["memory.add_observations"],
            "allow": ["*"],
            "deny": ["git.git_commit", "filesystem.write_*"],
            "hidden": ["memory.delete_*"],
            "approve": ["memory.create_*"],
            "approve_destructive": False,
            "max_tool_calls": 50,
            "tools": {
                "everything.get_sum": {
                    "args": {"properties": {"a": {"maximum": 100}}},
                    "max_calls": 5,
                    "rate": {"calls": 10, "per_seconds": 60},
                }
            },
        }
    )
    rules = config.tools["everything.get_sum"]
    assert rules.max_calls == 5
    assert rules.rate is not None
    assert (rules.rate.calls, rules.rate.per_seconds) == (10, 60)


@pytest.mark.parametrize(
    ("pattern", "servers", "may"),
    [
        ("*", [], True),
        ("*.delete_*", ["jira"], True),
        ("git.*", ["git"], True),
        ("git.*", ["github"], False),
        ("git*", ["github"], True),
        ("git*", ["jira"], False),
        ("g?t.git_log", ["git"], True),
        ("[gh]it.*", ["jira"], False),
        ("repo:file://*", ["repo"], True),
        ("repo:file://*", ["rep"], False),
        ("s?rv:x", ["s"], True),  # `?` may take the colon: s:rv:x is server s's resource rv:x
    ],
)
def test_a_pattern_may_name_a_server_unless_it_certainly_cannot(
    pattern: str, servers: list[str], may: bool
) -> None:
    assert may_name_server(pattern, servers) is may


@pytest.mark.parametrize(
    "pattern",
    ["*", "git.*", "*.read_*", "git.git_[!c]*", "memory.?ead_graph", "everything.get_sum", "*.*", "g*"],
)
def test_globs_that_can_match_a_qualified_name_are_accepted(pattern: str) -> None:
    assert PolicyConfig.model_validate({"deny": [pattern]}).deny == [pattern]


@pytest.mark.parametrize(
    ("pattern", "complaint"),
    [
        ("", "must not be empty"),
        ("git", 'write "git.*" for a whole server'),
        ("everything.get-sum", '"-" becomes "_"'),
        ("git.[commit", "never closed"),
        ("git. git_commit", "cannot occur in a tool name"),
        ("git.git_commit]", "cannot occur in a tool name"),
        ("memory.délete_*", "cannot occur in a tool name"),
    ],
)
def test_globs_that_could_never_match_are_config_errors(pattern: str, complaint: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyConfig.model_validate({"allow": ["*"], "deny": ["git.git_add", pattern]})
    [error] = caught.value.errors()
    assert error["loc"] == ("deny", 1)
    assert complaint in error["msg"]


@pytest.mark.parametrize("key", ["everything.get-sum", "git.*", "git", "everything.get_sum.x"])
def test_tools_keys_must_name_one_tool_exactly(key: str) -> None:
    with pytest.raises(ValidationError, match="must name one tool exactly"):
        PolicyConfig.model_validate({"tools": {key: {"max_calls": 1}}})


@pytest.mark.parametrize(
    ("fragment", "complaint"),
    [
        ({"properties": {"a": {"maximum": "100"}}}, "properties.a.maximum: '100' is not of type 'number'"),
        ({"properties": {"a": {"maximun": 100}}}, "properties.a: unknown keyword 'maximun' would be ignored"),
        ({"$defs": {"x": {"maximum": 1}}, "$ref": "#/$defs/x"}, "'$ref' is not supported"),
        ({"properties": {"a": {"$dynamicRef": "#x"}}}, "'$dynamicRef' is not supported"),
        ({"properties": {"url": {"format": "uri"}}}, "properties.url.format: 'uri' cannot be checked here"),
        ({"properties": {"to": {"format": "email"}}}, "'email' cannot be checked here"),
        ({"properties": {"name": {"pattern": "\\p{L}+"}}}, "is not a 'regex' (bad escape"),
        ({"properties": {"name": {"pattern": "(?u)x"}}}, "properties.name.pattern:"),
        ({"properties": {"name": {"pattern": "("}}}, "properties.name.pattern"),
        ({"type": "string"}, 'its "type" must allow "object"'),
        ({"properties": {"a": {"type": "strnig"}}}, "properties.a.type"),
        ({"dependencies": {"a": ["b"]}}, "unknown keyword 'dependencies'"),
    ],
)
def test_bad_argument_constraints_are_config_errors_with_their_path(
    fragment: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyConfig.model_validate({"tools": {"everything.get_sum": {"args": fragment}}})
    [error] = caught.value.errors()
    assert error["loc"] == ("tools", "everything.get_sum", "args")
    assert complaint in error["msg"]


def test_a_policy_error_inside_the_whole_config_is_located_by_its_path() -> None:
    class Root(BaseModel):
        policy: PolicyConfig

    with pytest.raises(ValidationError) as caught:
        Root.model_validate({"policy": {"tools": {"x.y": {"args": {"properties": {"a": {"minimum": "0"}}}}}}})
    [error] = caught.value.errors()
    assert error["loc"] == ("policy", "tools", "x.y", "args")
    assert "properties.a.minimum:" in error["msg"]


@pytest.mark.parametrize(
    "rules",
    [
        {"max_calls": -1},
        {"rate": {"calls": 0, "per_seconds": 60}},
        {"rate": {"calls": 1, "per_seconds": 0}},
        {"rate": {"calls": 1}},
        {"max_call": 5},
        {"args": ["not", "a", "schema"]},
    ],
)
def test_bad_quotas_and_unknown_keys_are_config_errors(rules: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PolicyConfig.model_validate({"tools": {"everything.get_sum": rules}})


@pytest.mark.parametrize("section", [{"max_tool_calls": -1}, {"hide": ["git.*"]}, {"deny": "git.*"}])
def test_bad_top_level_policy_keys_are_config_errors(section: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PolicyConfig.model_validate(section)


# ---- optional rules -----------------------------------------------------------------------------


def test_a_rule_is_a_pattern_or_an_optional_rule_object_and_plain_patterns_stay_strings() -> None:
    config = PolicyConfig.model_validate(
        {"deny": ["git.git_push", {"pattern": "jira.*", "optional": True}, {"pattern": "memory.delete_*"}]}
    )
    assert config.deny == [
        "git.git_push",
        PolicyRule(pattern="jira.*", optional=True),
        PolicyRule(pattern="memory.delete_*"),
    ]
    assert config.patterns("deny") == ["git.git_push", "jira.*", "memory.delete_*"]
    assert [rule.optional for rule in config.rules("deny")] == [False, True, False]
    assert config.patterns("allow") == ["*"]
    assert config.model_dump(mode="json")["deny"] == [
        "git.git_push",
        {"pattern": "jira.*", "optional": True},
        {"pattern": "memory.delete_*", "optional": False},
    ]


def test_the_compiled_policy_applies_optional_rules_like_plain_ones(real: Catalog) -> None:
    policy = Policy(
        PolicyConfig.model_validate(
            {
                "deny": [{"pattern": "git.git_commit", "optional": True}],
                "hidden": [{"pattern": "memory.delete_*", "optional": True}],
                "approve": [{"pattern": "memory.create_*"}],
            }
        )
    )
    assert policy.denial(get(real, "git.git_commit")) == 'deny: "git.git_commit"'
    assert not policy.visible(get(real, "memory.delete_entities"))
    assert policy.needs_approval(get(real, "memory.create_entities"))


@pytest.mark.parametrize(
    ("rule", "loc", "complaint"),
    [
        ({"pattern": "git"}, ("deny", 0, "pattern"), 'write "git.*" for a whole server'),
        ({"pattern": "git.*", "optionl": True}, ("deny", 0, "optionl"), "Extra inputs"),
        ({"optional": True}, ("deny", 0, "pattern"), "Field required"),
        ({"pattern": "git.*", "optional": "sometimes"}, ("deny", 0, "optional"), "valid boolean"),
        (3, ("deny", 0), 'a rule is a pattern, or {"pattern": "server.tool", "optional": true}'),
    ],
)
def test_bad_rules_are_config_errors_at_their_path(rule: Any, loc: tuple[Any, ...], complaint: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyConfig.model_validate({"deny": [rule]})
    [error] = caught.value.errors()
    assert error["loc"] == loc
    assert complaint in error["msg"]


def test_a_tool_policy_may_be_optional_too() -> None:
    config = PolicyConfig.model_validate({"tools": {"jira.create_issue": {"max_calls": 1, "optional": True}}})
    assert config.tools["jira.create_issue"].optional


def test_the_policy_config_is_frozen() -> None:
    config = PolicyConfig()
    with pytest.raises(ValidationError):
        config.read_only = True  # type: ignore[misc]
