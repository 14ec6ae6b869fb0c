"""Resource rules: `server:uri` globs in allow, deny and hidden, kept apart from the tool rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway import PolicyDenied, QuotaExceeded
from gateway.catalog import Catalog, CatalogServer
from gateway.children import ChildState, ChildStatus
from gateway.policy.config import PolicyConfig
from tests.config.helpers import errors_of
from tests.policy.helpers import policy_of
from tests.real_servers import snapshot_catalog


def server(name: str = "docs", *, resources: bool = True) -> CatalogServer:
    found = Catalog({}, [ChildStatus(name, "stdio", ChildState.READY, resources=resources)]).server(name)
    assert found is not None
    return found


@pytest.mark.parametrize(
    "pattern", ["docs:*", "*:*", "docs:file:///srv/*.md", "d?cs:note://*", "[dg]ocs:*", "*:secret://*", "*"]
)
def test_resource_rules_are_accepted_in_allow_deny_and_hidden(pattern: str) -> None:
    config = PolicyConfig.model_validate({"allow": [pattern], "deny": [pattern], "hidden": [pattern]})
    assert config.allow == config.deny == config.hidden == [pattern]


@pytest.mark.parametrize(
    ("pattern", "complaint"),
    [
        ("docs:", "names no resource"),
        (":note://x", "names no resource"),
        ("docs.x:note://x", "'.' cannot occur in a server name"),
        ("my-docs:*", "'-' cannot occur in a server name"),
        ("[docs:x", "never closed"),
        ("docs:note://\x00", "control character"),
        ("docs:note://my%20notes/*", "percent-escape '%20'"),
        ("docs:NOTE://*", "scheme in lower case"),
    ],
)
def test_resource_rules_that_could_never_match_are_config_errors(pattern: str, complaint: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyConfig.model_validate({"hidden": [pattern]})
    [error] = caught.value.errors()
    assert error["loc"] == ("hidden", 0)
    assert complaint in error["msg"]


@pytest.mark.parametrize("key", ["approve", "allow_writes"])
def test_approve_and_allow_writes_take_no_resource_rule(key: str) -> None:
    with pytest.raises(ValidationError, match="resources are governed by allow, deny and hidden alone"):
        PolicyConfig.model_validate({key: ["docs.x", {"pattern": "docs:*"}]})


def test_a_resource_rule_naming_no_configured_server_is_a_config_error_with_a_did_you_mean() -> None:
    data = {"mcpServers": {"docs": {"command": "d"}}, "policy": {"deny": ["dcos:*", "docs:*", "*:x"]}}
    assert errors_of(data) == ['policy.deny[0]: "dcos:*" names no configured server; did you mean "docs"?']


def test_tool_rules_match_tools_only_resource_rules_resources_only_and_star_both() -> None:
    policy = policy_of(allow=["docs.*", "docs:note://*"], hidden=["docs:secret://*"])
    assert policy.resource_denial("docs", "note://a") is None
    assert policy.resource_denial("docs", "file:///a") == "allow: no pattern matches it"  # docs.* is no help
    assert not policy.resource_visible("docs", "secret://key")
    assert policy.resource_visible("docs", "note://a")
    everything = policy_of(deny=["*"], hidden=["*"])
    assert everything.resource_denial("docs", "note://a") == 'deny: "*"'
    assert not everything.resource_visible("docs", "note://a")


def test_resource_rules_leave_every_tool_decision_as_it_was() -> None:
    real = snapshot_catalog()
    tools_only = policy_of(deny=["git.git_commit"], hidden=["memory.delete_*"], allow=["git.*", "memory.*"])
    with_resources = policy_of(
        deny=["git.git_commit", "*:*"],
        hidden=["memory.delete_*", "git:*"],
        allow=["git.*", "memory.*", "x:y"],
    )
    for entry in real:
        assert with_resources.visible(entry) == tools_only.visible(entry), entry.qualified
        assert with_resources.denial(entry) == tools_only.denial(entry), entry.qualified
    # A resource rule names no tool, so it never blocks a server for matching none of its tools.
    assert with_resources.unmatched(real) == tools_only.unmatched(real) == {}
    assert with_resources.server_visible(server("git", resources=False))


def test_a_server_whose_tools_are_all_hidden_stays_for_the_resources_it_offers() -> None:
    assert policy_of(hidden=["docs.get_*"]).server_visible(server())
    assert not policy_of(hidden=["docs.*", "docs:*"]).server_visible(server())
    assert not policy_of(hidden=["*"]).server_visible(server())
    assert policy_of(hidden=["docs:secret://*"]).resources_visible(server())
    assert not policy_of(hidden=["*:*"]).resources_visible(server())


def test_a_read_approve_would_cover_is_refused_since_a_read_cannot_ask() -> None:
    policy = policy_of(approve=["*"])
    with pytest.raises(PolicyDenied) as refused:
        policy.check_resource("docs", "note://a")
    assert str(refused.value) == (
        'docs:note://a needs the user\'s approval (policy.approve: "*" covers every call), which a resource '
        'read cannot ask for; to read resources, the team narrows approve to tools ("*.*")'
    )
    policy_of(approve=["*.*"]).check_resource("docs", "note://a")  # a tool rule: reads go ahead


def test_a_resource_request_counts_toward_the_executions_tool_calls() -> None:
    quota = policy_of(max_tool_calls=1).new_execution()
    quota.acquire_name("docs:note://a")
    with pytest.raises(QuotaExceeded, match=r"docs:resources/list: quota of 1 tool calls per execution"):
        quota.acquire_name("docs:resources/list")
    assert quota.counts() == {"docs:note://a": 1}


def test_denying_or_hiding_a_whole_server_takes_its_resources_too() -> None:
    denied = policy_of(deny=["docs.*"])
    assert denied.resource_denial("docs", "note://a") == 'deny: "docs:*"'
    assert denied.resource_denial("other", "note://a") is None
    hidden = policy_of(hidden=["docs.*"])
    assert not hidden.resource_visible("docs", "note://a")
    assert not hidden.server_visible(server())
    # A rule naming some tools, or servers by a wildcard, stays a tool rule.
    assert policy_of(deny=["docs.get_*"]).resource_denial("docs", "note://a") is None
    assert policy_of(hidden=["do*.*"]).resource_visible("docs", "note://a")
