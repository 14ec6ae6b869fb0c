"""The policy engine: hidden tools, allow and deny, read_only, approvals, execute_code's hints, typos."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import Tool

from gateway import PolicyDenied, ToolCallError
from gateway.calls._tool_calls import unknown_tool_message
from gateway.catalog import Catalog
from gateway.catalog.docs import render_search
from gateway.policy import Policy
from gateway.policy._policy import is_destructive
from tests.policy.helpers import get, made_up_entry, policy_of
from tests.real_servers import snapshot_catalog, snapshot_tools


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


# ---- hidden tools -------------------------------------------------------------------------------


def test_hidden_patterns_hide_tools_from_listing_and_calls(real: Catalog) -> None:
    policy = policy_of(hidden=["memory.delete_*"])
    hidden = [e.qualified for e in real if not policy.visible(e)]
    assert hidden == ["memory.delete_entities", "memory.delete_observations", "memory.delete_relations"]
    assert not any(policy.allows(get(real, name)) for name in hidden)


def _without(predicate: Any) -> Catalog:
    """The real catalog as if the tools `predicate` picks had never been listed."""
    tools = snapshot_tools()
    return Catalog(
        {server: [t for t in listed if not predicate(server, t)] for server, listed in tools.items()}
    )


@pytest.mark.parametrize(
    "name",
    [
        "memory.delete_entities",
        "memory.delete-entities",
        "tools.memory.delete_relations",
        "memory.delete_entitie",
    ],
)
def test_a_call_to_a_hidden_tool_looks_exactly_like_a_call_to_an_unknown_tool(
    real: Catalog, name: str
) -> None:
    policy = policy_of(hidden=["memory.delete_*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    never = _without(lambda server, tool: server == "memory" and tool.name.startswith("delete_"))
    assert visible.get(name) is None
    assert unknown_tool_message(visible, name) == unknown_tool_message(never, name)
    assert not any("delete_" in suggestion for suggestion in visible.suggest(name, limit=50))


@pytest.mark.parametrize("query", ["", "delete", "remove entities from the knowledge graph", "memory"])
def test_search_docs_over_the_filtered_catalog_never_shows_hidden_tools(real: Catalog, query: str) -> None:
    policy = policy_of(hidden=["memory.delete_*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    never = _without(lambda server, tool: server == "memory" and tool.name.startswith("delete_"))
    assert render_search(visible, query) == render_search(never, query)
    assert render_search(visible, "", server="memory") == render_search(never, "", server="memory")


@pytest.mark.parametrize("pattern", ["git.*", "*", "gi*", "g?t.*", "*.*"])
def test_hiding_every_tool_of_a_server_hides_the_server_too(real: Catalog, pattern: str) -> None:
    policy = policy_of(hidden=[pattern])
    git = real.server("git")
    assert git is not None
    assert not policy.server_visible(git)
    visible = real.filtered(policy.visible, policy.server_visible)
    assert visible.server("git") is None
    assert visible.tools_of("git") == ()
    if pattern.startswith("g"):
        never = Catalog({s: t for s, t in snapshot_tools().items() if s != "git"})
        assert render_search(visible, "") == render_search(never, "")
        assert unknown_tool_message(visible, "git.git_status") == unknown_tool_message(
            never, "git.git_status"
        )


@pytest.mark.parametrize("pattern", ["git.git_*", "git.?*", "git.[!x]*", "memory.*", "git.git_status"])
def test_patterns_that_may_leave_a_server_some_tools_keep_it_listed(real: Catalog, pattern: str) -> None:
    git = real.server("git")
    assert git is not None
    assert policy_of(hidden=[pattern]).server_visible(git)


def test_the_filtered_catalog_counts_only_the_visible_tools(real: Catalog) -> None:
    policy = policy_of(hidden=["memory.delete_*", "time.*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    counts = {s.identifier: s.tool_count for s in visible.servers}
    assert counts == {"everything": 13, "filesystem": 14, "git": 12, "memory": 6}
    assert len(visible) == 45
    assert [e.qualified for e in visible] == [e.qualified for e in real if policy.visible(e)]


def test_check_access_on_a_hidden_tool_still_says_unknown_not_denied(real: Catalog) -> None:
    policy = policy_of(hidden=["memory.delete_*"])
    with pytest.raises(ToolCallError) as caught:
        policy.check_access(get(real, "memory.delete_entities"))
    assert not isinstance(caught.value, PolicyDenied)
    assert caught.value.kind == "ToolError"
    assert "unknown tool" in str(caught.value)
    assert "polic" not in str(caught.value)


def test_a_denial_never_names_hidden_tools(real: Catalog) -> None:
    policy = policy_of(deny=["memory.*"], hidden=["memory.delete_*"])
    with pytest.raises(PolicyDenied) as caught:
        policy.check_access(get(real, "memory.create_entities"))
    assert str(caught.value) == 'memory.create_entities is denied by policy (deny: "memory.*")'
    assert "delete" not in str(caught.value)


# ---- allow and deny -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "tool", "rule"),
    [
        ({}, "git.git_commit", None),
        ({"deny": ["git.git_commit"]}, "git.git_commit", 'deny: "git.git_commit"'),
        ({"deny": ["git.git_commit"]}, "git.git_status", None),
        ({"deny": ["filesystem.write_*"]}, "filesystem.write_file", 'deny: "filesystem.write_*"'),
        ({"deny": ["filesystem.write_*"]}, "filesystem.edit_file", None),
        ({"allow": ["git.git_commit"], "deny": ["git.*"]}, "git.git_commit", 'deny: "git.*"'),
        ({"allow": ["git.*"], "deny": ["git.git_commit"]}, "git.git_commit", 'deny: "git.git_commit"'),
        ({"allow": ["git.*"]}, "git.git_commit", None),
        ({"allow": ["git.*"]}, "memory.read_graph", "allow: no pattern matches it"),
        ({"allow": []}, "time.get_current_time", "allow: no pattern matches it"),
        ({"allow": ["*.read_*", "*.get_*"]}, "memory.read_graph", None),
        ({"allow": ["*.read_*", "*.get_*"]}, "memory.create_entities", "allow: no pattern matches it"),
        ({"deny": ["Git.git_commit"]}, "git.git_commit", None),
        ({"deny": ["git.GIT_COMMIT"]}, "git.git_commit", None),
        ({"allow": ["GIT.*"]}, "git.git_commit", "allow: no pattern matches it"),
        ({"deny": ["git.git_commi?"]}, "git.git_commit", 'deny: "git.git_commi?"'),
        ({"deny": ["git.git_[a-c]*"]}, "git.git_commit", 'deny: "git.git_[a-c]*"'),
        ({"deny": ["git.git_[!a-c]*"]}, "git.git_commit", None),
    ],
)
def test_deny_beats_allow_and_a_tool_not_allowed_is_denied(
    real: Catalog, config: dict[str, Any], tool: str, rule: str | None
) -> None:
    assert policy_of(**config).denial(get(real, tool)) == rule


def test_a_denied_call_raises_policy_denied_naming_the_rule(real: Catalog) -> None:
    policy = policy_of(deny=["git.git_commit", "filesystem.write_*"])
    with pytest.raises(PolicyDenied) as caught:
        policy.check_access(get(real, "git.git_commit"))
    error = caught.value
    assert str(error) == 'git.git_commit is denied by policy (deny: "git.git_commit")'
    assert isinstance(error, ToolCallError)
    assert error.kind == "PolicyDenied"
    assert error.rule == 'deny: "git.git_commit"'


def test_patterns_match_the_qualified_name_whatever_spelling_the_call_used(real: Catalog) -> None:
    policy = policy_of(deny=["everything.get_sum"])
    for spelling in ("everything.get_sum", "everything.get-sum", "tools.everything.get_sum"):
        assert policy.denial(get(real, spelling)) == 'deny: "everything.get_sum"'


# ---- read_only ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "allowed"),
    [
        ("memory.read_graph", True),  # readOnlyHint true
        ("filesystem.read_text_file", True),  # readOnlyHint true, destructiveHint unset
        ("time.get_current_time", True),
        ("memory.create_entities", False),  # readOnlyHint false
        ("git.git_commit", False),
        ("filesystem.write_file", False),
        ("memory.add_observations", True),  # allow_writes
    ],
)
def test_read_only_allows_read_only_tools_and_allow_writes_only(
    real: Catalog, tool: str, allowed: bool
) -> None:
    policy = policy_of(read_only=True, allow_writes=["memory.add_observations"])
    denial = policy.denial(get(real, tool))
    assert (denial is None) == allowed
    if not allowed:
        assert denial == "read_only: it is not annotated read-only and allow_writes does not match it"


@pytest.mark.parametrize(
    ("annotated", "read_only", "allowed"),
    [(False, None, False), (True, None, False), (True, False, False), (True, True, True)],
)
def test_read_only_counts_a_tool_without_the_hint_as_a_write(
    annotated: bool, read_only: bool | None, allowed: bool
) -> None:
    entry = made_up_entry("repo.status", read_only=read_only, annotated=annotated)
    assert (policy_of(read_only=True).denial(entry) is None) == allowed
    assert policy_of(read_only=False).denial(entry) is None


def test_allow_writes_neither_beats_deny_nor_unhides_nor_widens_allow(real: Catalog) -> None:
    entry = get(real, "memory.add_observations")
    base = {"read_only": True, "allow_writes": ["memory.*"]}
    assert policy_of(**base).denial(entry) is None
    assert (
        policy_of(**base, deny=["memory.add_observations"]).denial(entry) == 'deny: "memory.add_observations"'
    )
    assert not policy_of(**base, hidden=["memory.add_*"]).allows(entry)
    assert policy_of(**base, allow=["git.*"]).denial(entry) == "allow: no pattern matches it"


def test_allow_writes_changes_nothing_without_read_only(real: Catalog) -> None:
    policy = policy_of(allow_writes=["memory.add_observations"])
    assert all(policy.denial(e) is None for e in real)


# ---- approval -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("read_only", "destructive", "expected"),
    [
        (None, None, True),  # no hints: MCP defaults say it may destroy
        (False, None, True),
        (False, True, True),
        (False, False, False),
        (None, False, False),
        (True, None, False),  # destructiveHint only means something for tools that write
        (True, True, False),
    ],
)
def test_destructive_follows_the_mcp_defaults(
    read_only: bool | None, destructive: bool | None, expected: bool
) -> None:
    entry = made_up_entry(read_only=read_only, destructive=destructive)
    assert is_destructive(entry) is expected
    assert policy_of(approve_destructive=True).needs_approval(entry) is expected
    assert policy_of().needs_approval(entry) is False


def test_approve_patterns_and_approve_destructive_pick_the_tools_needing_a_human(real: Catalog) -> None:
    policy = policy_of(approve=["memory.create_*"], approve_destructive=True)
    needing = [e.qualified for e in real if policy.needs_approval(e)]
    assert needing == [
        "filesystem.write_file",
        "filesystem.edit_file",
        "filesystem.move_file",
        "git.git_reset",
        "memory.create_entities",
        "memory.create_relations",
        "memory.delete_entities",
        "memory.delete_observations",
        "memory.delete_relations",
    ]
    only_patterns = policy_of(approve=["memory.create_*"])
    assert [e.qualified for e in real if only_patterns.needs_approval(e)] == [
        "memory.create_entities",
        "memory.create_relations",
    ]


# ---- execute_code's annotations -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "hints"),
    [
        ({}, (False, True)),
        ({"read_only": True}, (True, False)),
        ({"read_only": True, "allow_writes": ["memory.add_observations"]}, (False, False)),
        ({"read_only": True, "allow_writes": ["memory.delete_entities"]}, (False, True)),
        (
            {"read_only": True, "allow_writes": ["memory.delete_entities"], "hidden": ["memory.delete_*"]},
            (True, False),
        ),
        ({"allow": ["*.read_*", "*.get_*", "*.list_*"]}, (True, False)),
        ({"deny": ["filesystem.*", "git.*", "memory.delete_*"]}, (False, False)),
        ({"hidden": ["filesystem.*", "git.git_reset", "memory.delete_*"]}, (False, False)),
        ({"allow": []}, (True, False)),
    ],
)
def test_execute_code_annotations_reflect_the_callable_tools(
    real: Catalog, config: dict[str, Any], hints: tuple[bool, bool]
) -> None:
    assert policy_of(**config).execute_code_annotations(real) == hints


def test_a_tool_without_annotations_makes_execute_code_writing_and_destructive() -> None:
    entries = [made_up_entry("a.read", read_only=True), made_up_entry("b.mystery", annotated=False)]
    assert Policy().execute_code_annotations(entries) == (False, True)
    assert policy_of(deny=["b.*"]).execute_code_annotations(entries) == (True, False)


@pytest.mark.parametrize(
    ("config", "hints"),
    [
        ({}, (False, True)),
        ({"read_only": True}, (True, False)),
        ({"read_only": True, "allow_writes": ["memory.add_observations"]}, (False, True)),
        ({"allow": ["time.*"]}, (False, True)),
    ],
)
def test_an_incomplete_catalog_gives_only_the_hints_the_policy_itself_guarantees(
    real: Catalog, config: dict[str, Any], hints: tuple[bool, bool]
) -> None:
    reads = [e for e in real if e.read_only is True]
    assert policy_of(**config).execute_code_annotations(reads, complete=False) == hints


# ---- diagnostics --------------------------------------------------------------------------------


def test_a_rule_matching_no_tool_of_the_server_it_names_blocks_that_server(real: Catalog) -> None:
    policy = policy_of(
        deny=["git.git_comit", "filesystem.write_*"],
        hidden=["memory.delete_entitys"],
        tools={"everything.get_summ": {"max_calls": 1}},
    )
    blocked = policy.unmatched(real)
    assert set(blocked) == {"git", "memory", "everything"}
    assert blocked["git"].startswith(
        'policy.deny[0] "git.git_comit" matches none of its tools (did you mean git.git_commit'
    )
    assert 'policy.hidden[0] "memory.delete_entitys"' in blocked["memory"]
    assert 'policy.tools["everything.get_summ"] "everything.get_summ"' in blocked["everything"]
    assert blocked["git"].endswith("fix the rule, or mark it optional, to reach its tools")


def _shifted_catalog(*names: str) -> Catalog:
    """A made-up `shift` server listing `names`, beside a `calm` server with one tool."""
    tools = {
        name: [Tool(name=n, input_schema={"type": "object"}) for n in listed]
        for name, listed in {"shift": names, "calm": ("drop_all",)}.items()
    }
    return Catalog(tools)


def test_a_rule_telling_apart_tools_that_share_a_python_name_blocks_their_server() -> None:
    # `drop-all` was `shift.drop_all` when the rule was written; the new `drop_all` takes that name.
    catalog = _shifted_catalog("drop-all", "drop_all", "echo")
    assert catalog.get("shift.drop-all") == catalog.get("shift.drop_all_2")
    blocked = policy_of(deny=["shift.drop_all"]).unmatched(catalog)
    assert list(blocked) == ["shift"]
    assert blocked["shift"].startswith(
        'policy.deny ("shift.drop_all") tells apart its tools "drop-all" (shift.drop_all_2) and '
        '"drop_all" (shift.drop_all)'
    )
    assert "write rules that treat them alike" in blocked["shift"]
    visible = catalog.filtered(lambda _: True, blocked=blocked)
    assert visible.get("shift.drop-all") is None
    assert visible.get("shift.drop_all_2") is None


@pytest.mark.parametrize(
    "config",
    [
        {"tools": {"shift.drop_all_2": {"max_calls": 1}}},
        {"allow": ["calm.*", "shift.drop_all"]},
        {"approve": ["*.drop_all"]},
        {"roles": {"ops": {"principals": ["p"], "hidden": ["shift.drop_all_2"]}}},
        {"deny": [{"pattern": "shift.drop_all", "optional": True}]},
    ],
)
def test_every_kind_of_rule_that_tells_them_apart_blocks_the_server(config: dict[str, Any]) -> None:
    assert list(policy_of(**config).unmatched(_shifted_catalog("drop-all", "drop_all"))) == ["shift"]


@pytest.mark.parametrize(
    ("names", "config"),
    [
        (("drop-all", "drop_all"), {"deny": ["shift.drop_all*"]}),
        (("drop-all", "drop_all"), {"deny": ["shift.*"], "hidden": ["*.echo"]}),
        (("drop-all", "drop_all", "Drop_All"), {"deny": ["shift.drop_all", "shift.drop_all_2"]}),
        (("drop-all", "echo"), {"deny": ["shift.drop_all"]}),
    ],
)
def test_rules_that_treat_sharing_tools_alike_or_a_server_without_sharing_block_nothing(
    names: tuple[str, ...], config: dict[str, Any]
) -> None:
    assert policy_of(**config).unmatched(_shifted_catalog(*names)) == {}


def test_tools_whose_names_differ_only_by_width_or_accent_share_a_python_name() -> None:
    catalog = _shifted_catalog("\uff44rop_all", "dr\u00f6p_all", "drop_all")
    [group] = catalog.name_collisions("shift")
    assert {entry.tool_name: entry.qualified for entry in group} == {
        "\uff44rop_all": "shift.drop_all_3",
        "dr\u00f6p_all": "shift.drop_all_2",
        "drop_all": "shift.drop_all",
    }
    assert list(policy_of(deny=["shift.drop_all"]).unmatched(catalog)) == ["shift"]


def test_wildcard_servers_optional_rules_and_the_default_allow_block_nothing(real: Catalog) -> None:
    policy = policy_of(
        deny=["*.delete_nothing", "git*.x", {"pattern": "git.git_comit", "optional": True}],
        tools={"everything.get_summ": {"max_calls": 1, "optional": True}},
    )
    assert policy.unmatched(real) == {}


def test_a_blocked_server_keeps_no_tools_in_the_filtered_catalog_and_says_why(real: Catalog) -> None:
    policy = policy_of(deny=["git.git_comit"])
    visible = real.filtered(policy.visible, policy.server_visible, blocked=policy.unmatched(real))
    git = visible.server("git")
    assert git is not None
    assert git.tool_count == 0
    assert git.blocked is not None
    assert visible.get("git.git_status") is None
    assert visible.get("time.get_current_time") is not None
    assert "git (blocked: policy.deny[0]" in render_search(visible, "")
    assert "server 'git' is blocked" in unknown_tool_message(visible, "git.git_status")


def test_search_docs_marks_denied_and_approval_tools(real: Catalog) -> None:
    policy = policy_of(deny=["git.git_commit"], approve=["memory.create_*"])
    visible = real.filtered(policy.visible, access=policy.access_note)
    assert "git_commit [denied by policy]" in render_search(visible, "")
    assert "memory.create_entities(" in render_search(visible, "create entities", limit=1)
    assert (
        render_search(visible, "create entities", limit=1)
        .split("\n")[1]
        .endswith("[needs the user's approval]")
    )


def test_diagnostics_point_at_constraints_on_properties_the_tool_does_not_take(real: Catalog) -> None:
    policy = policy_of(tools={"git.git_status": {"args": {"properties": {"repository": {"enum": ["/srv"]}}}}})
    assert policy.diagnostics(real) == [
        "policy.tools[\"git.git_status\"].args.properties.repository: the tool takes no 'repository' "
        "(its wire names: repo_path)",
    ]
    assert policy_of(deny=["git.*"], tools={"everything.get_sum": {"max_calls": 1}}).diagnostics(real) == []
