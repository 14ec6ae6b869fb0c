"""The policy engine: visibility, allow/deny, read_only, argument constraints, approvals, quotas."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import ListToolsResult, Tool, ToolAnnotations
from pydantic import BaseModel, ValidationError

from gateway import PolicyDenied, QuotaExceeded, ToolCallError
from gateway._gateway import _unknown_tool_message
from gateway._policy import Policy, PolicyConfig, is_destructive
from gateway._quotas import ExecutionQuota, RateLimiter
from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._render import render_search
from tests.real_servers import TOOL_SNAPSHOTS

DATA = TOOL_SNAPSHOTS


def _real_tools() -> dict[str, list[Tool]]:
    return {
        path.stem: ListToolsResult.model_validate_json(path.read_text()).tools
        for path in sorted(DATA.glob("*.json"))
    }


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return Catalog(_real_tools())


def _get(catalog: Catalog, name: str) -> CatalogEntry:
    entry = catalog.get(name)
    assert entry is not None, name
    return entry


def _policy(clock: FakeClock | None = None, **config: Any) -> Policy:
    parsed = PolicyConfig.model_validate(config)
    return Policy(parsed, clock=clock) if clock is not None else Policy(parsed)


def _entry(
    name: str = "repo.status",
    properties: dict[str, Any] | None = None,
    *,
    read_only: bool | None = None,
    destructive: bool | None = None,
    annotated: bool = True,
) -> CatalogEntry:
    """One tool of a made-up server; `annotated=False` gives it no annotations at all."""
    server, _, tool = name.partition(".")
    hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive) if annotated else None
    schema = {"type": "object", "properties": properties or {}}
    return _get(Catalog({server: [Tool(name=tool, input_schema=schema, annotations=hints)]}), name)


class FakeClock:
    """A monotonic clock the test moves by hand: no sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _denied(policy: Policy, entry: CatalogEntry, wire: dict[str, Any]) -> PolicyDenied:
    with pytest.raises(PolicyDenied) as caught:
        policy.check_arguments(entry, wire)
    return caught.value


# ---- config validation --------------------------------------------------------------------------


def test_the_default_policy_allows_and_shows_everything(real: Catalog) -> None:
    policy = Policy()
    assert all(policy.visible(e) and policy.denial(e) is None for e in real)
    assert not any(policy.needs_approval(e) for e in real)
    quota = policy.new_execution()
    for _ in range(1000):
        quota.acquire(_get(real, "everything.get_sum"))


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


def test_the_policy_config_is_frozen() -> None:
    config = PolicyConfig()
    with pytest.raises(ValidationError):
        config.read_only = True  # type: ignore[misc]


# ---- hidden tools -------------------------------------------------------------------------------


def test_hidden_patterns_hide_tools_from_listing_and_calls(real: Catalog) -> None:
    policy = _policy(hidden=["memory.delete_*"])
    hidden = [e.qualified for e in real if not policy.visible(e)]
    assert hidden == ["memory.delete_entities", "memory.delete_observations", "memory.delete_relations"]
    assert not any(policy.allows(_get(real, name)) for name in hidden)


def _without(predicate: Any) -> Catalog:
    """The real catalog as if the tools `predicate` picks had never been listed."""
    tools = _real_tools()
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
    policy = _policy(hidden=["memory.delete_*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    never = _without(lambda server, tool: server == "memory" and tool.name.startswith("delete_"))
    assert visible.get(name) is None
    assert _unknown_tool_message(visible, name) == _unknown_tool_message(never, name)
    assert not any("delete_" in suggestion for suggestion in visible.suggest(name, limit=50))


@pytest.mark.parametrize("query", ["", "delete", "remove entities from the knowledge graph", "memory"])
def test_search_docs_over_the_filtered_catalog_never_shows_hidden_tools(real: Catalog, query: str) -> None:
    policy = _policy(hidden=["memory.delete_*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    never = _without(lambda server, tool: server == "memory" and tool.name.startswith("delete_"))
    assert render_search(visible, query) == render_search(never, query)
    assert render_search(visible, "", server="memory") == render_search(never, "", server="memory")


@pytest.mark.parametrize("pattern", ["git.*", "*", "gi*", "g?t.*", "*.*"])
def test_hiding_every_tool_of_a_server_hides_the_server_too(real: Catalog, pattern: str) -> None:
    policy = _policy(hidden=[pattern])
    git = real.server("git")
    assert git is not None
    assert not policy.server_visible(git)
    visible = real.filtered(policy.visible, policy.server_visible)
    assert visible.server("git") is None
    assert visible.tools_of("git") == ()
    if pattern.startswith("g"):
        never = Catalog({s: t for s, t in _real_tools().items() if s != "git"})
        assert render_search(visible, "") == render_search(never, "")
        assert _unknown_tool_message(visible, "git.git_status") == _unknown_tool_message(
            never, "git.git_status"
        )


@pytest.mark.parametrize("pattern", ["git.git_*", "git.?*", "git.[!x]*", "memory.*", "git.git_status"])
def test_patterns_that_may_leave_a_server_some_tools_keep_it_listed(real: Catalog, pattern: str) -> None:
    git = real.server("git")
    assert git is not None
    assert _policy(hidden=[pattern]).server_visible(git)


def test_the_filtered_catalog_counts_only_the_visible_tools(real: Catalog) -> None:
    policy = _policy(hidden=["memory.delete_*", "time.*"])
    visible = real.filtered(policy.visible, policy.server_visible)
    counts = {s.identifier: s.tool_count for s in visible.servers}
    assert counts == {"everything": 13, "filesystem": 14, "git": 12, "memory": 6}
    assert len(visible) == 45
    assert [e.qualified for e in visible] == [e.qualified for e in real if policy.visible(e)]


def test_check_access_on_a_hidden_tool_still_says_unknown_not_denied(real: Catalog) -> None:
    policy = _policy(hidden=["memory.delete_*"])
    with pytest.raises(ToolCallError) as caught:
        policy.check_access(_get(real, "memory.delete_entities"))
    assert not isinstance(caught.value, PolicyDenied)
    assert caught.value.kind == "ToolError"
    assert "unknown tool" in str(caught.value)
    assert "polic" not in str(caught.value)


def test_a_denial_never_names_hidden_tools(real: Catalog) -> None:
    policy = _policy(deny=["memory.*"], hidden=["memory.delete_*"])
    with pytest.raises(PolicyDenied) as caught:
        policy.check_access(_get(real, "memory.create_entities"))
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
    assert _policy(**config).denial(_get(real, tool)) == rule


def test_a_denied_call_raises_policy_denied_naming_the_rule(real: Catalog) -> None:
    policy = _policy(deny=["git.git_commit", "filesystem.write_*"])
    with pytest.raises(PolicyDenied) as caught:
        policy.check_access(_get(real, "git.git_commit"))
    error = caught.value
    assert str(error) == 'git.git_commit is denied by policy (deny: "git.git_commit")'
    assert isinstance(error, ToolCallError)
    assert error.kind == "PolicyDenied"
    assert error.rule == 'deny: "git.git_commit"'


def test_patterns_match_the_qualified_name_whatever_spelling_the_call_used(real: Catalog) -> None:
    policy = _policy(deny=["everything.get_sum"])
    for spelling in ("everything.get_sum", "everything.get-sum", "tools.everything.get_sum"):
        assert policy.denial(_get(real, spelling)) == 'deny: "everything.get_sum"'


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
    policy = _policy(read_only=True, allow_writes=["memory.add_observations"])
    denial = policy.denial(_get(real, tool))
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
    entry = _entry("repo.status", read_only=read_only, annotated=annotated)
    assert (_policy(read_only=True).denial(entry) is None) == allowed
    assert _policy(read_only=False).denial(entry) is None


def test_allow_writes_neither_beats_deny_nor_unhides_nor_widens_allow(real: Catalog) -> None:
    entry = _get(real, "memory.add_observations")
    base = {"read_only": True, "allow_writes": ["memory.*"]}
    assert _policy(**base).denial(entry) is None
    assert (
        _policy(**base, deny=["memory.add_observations"]).denial(entry) == 'deny: "memory.add_observations"'
    )
    assert not _policy(**base, hidden=["memory.add_*"]).allows(entry)
    assert _policy(**base, allow=["git.*"]).denial(entry) == "allow: no pattern matches it"


def test_allow_writes_changes_nothing_without_read_only(real: Catalog) -> None:
    policy = _policy(allow_writes=["memory.add_observations"])
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
    entry = _entry(read_only=read_only, destructive=destructive)
    assert is_destructive(entry) is expected
    assert _policy(approve_destructive=True).needs_approval(entry) is expected
    assert _policy().needs_approval(entry) is False


def test_approve_patterns_and_approve_destructive_pick_the_tools_needing_a_human(real: Catalog) -> None:
    policy = _policy(approve=["memory.create_*"], approve_destructive=True)
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
    only_patterns = _policy(approve=["memory.create_*"])
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
    assert _policy(**config).execute_code_annotations(real) == hints


def test_a_tool_without_annotations_makes_execute_code_writing_and_destructive() -> None:
    entries = [_entry("a.read", read_only=True), _entry("b.mystery", annotated=False)]
    assert Policy().execute_code_annotations(entries) == (False, True)
    assert _policy(deny=["b.*"]).execute_code_annotations(entries) == (True, False)


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
    assert _policy(**config).execute_code_annotations(reads, complete=False) == hints


# ---- argument constraints -----------------------------------------------------------------------

GET_SUM_MAX_100: dict[str, Any] = {
    "tools": {"everything.get_sum": {"args": {"properties": {"a": {"maximum": 100}}}}}
}


def test_arguments_within_the_constraints_pass(real: Catalog) -> None:
    policy = _policy(**GET_SUM_MAX_100)
    entry = _get(real, "everything.get_sum")
    for a in (100, 99.5, -(10**400), 0, 1e-300):
        policy.check_arguments(entry, {"a": a, "b": 1})


def test_a_violated_constraint_names_the_rule_and_the_field(real: Catalog) -> None:
    error = _denied(_policy(**GET_SUM_MAX_100), _get(real, "everything.get_sum"), {"a": 150, "b": 1})
    assert str(error) == (
        "everything.get_sum is denied by policy "
        '(policy.tools["everything.get_sum"].args.properties.a.maximum): '
        "argument a: 150 is greater than the maximum of 100"
    )
    assert error.rule == 'policy.tools["everything.get_sum"].args.properties.a.maximum'
    assert error.kind == "PolicyDenied"


def test_tools_without_constraints_are_not_checked(real: Catalog) -> None:
    policy = _policy(**GET_SUM_MAX_100)
    policy.check_arguments(
        _get(real, "everything.echo"), {"message": "\x00\uff46\uff55\uff4c\uff4c\u202e", "x": float("nan")}
    )


REPO_ENUM = {"properties": {"repo_path": {"enum": ["/srv/app"]}}}
REPO_PATTERN = {"properties": {"repo_path": {"pattern": "^/srv/[a-z]+$"}}}
PATH_WORD = {"properties": {"path": {"pattern": "^[\\w/.]+\\.txt$"}}}
DIGITS = {"properties": {"count": {"pattern": "^\\d+$"}}}
CASELESS = {"properties": {"name": {"pattern": "(?i)^[a-z]+$"}}}
MAX_100 = {"properties": {"a": {"maximum": 100}}}
MIN_0 = {"properties": {"a": {"minimum": 0}}}

# (what is tried, the fragment, the wire arguments, a piece of the expected rule)
BYPASSES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    # unicode look-alikes
    ("cyrillic o against an enum", REPO_ENUM, {"repo_path": "/srv/\u0430pp"}, "repo_path.enum"),
    (
        "fullwidth letter against an enum",
        REPO_ENUM,
        {"repo_path": "/srv/\uff41pp"},
        "args: constrained strings",
    ),
    ("cyrillic a against a pattern", REPO_PATTERN, {"repo_path": "/srv/\u0430pp"}, "repo_path.pattern"),
    (
        "fullwidth letter against a pattern",
        REPO_PATTERN,
        {"repo_path": "/srv/\uff41pp"},
        "args: constrained strings",
    ),
    ("cyrillic letter against \\w", PATH_WORD, {"path": "/srv/\u0430.txt"}, "path.pattern"),
    ("arabic-indic digits against \\d", DIGITS, {"count": "\u0661\u0662"}, "count.pattern"),
    ("kelvin sign under (?i)", CASELESS, {"name": "\u212aelvin"}, "args: constrained strings"),
    ("dotless i under (?i)", CASELESS, {"name": "\u0131d"}, "name.pattern"),
    (
        "decomposed accent against an enum",
        {"properties": {"n": {"enum": ["é"]}}},
        {"n": "e\u0301"},
        "strings",
    ),
    ("fullwidth dots for a parent path", REPO_PATTERN, {"repo_path": "/srv/\uff0e\uff0e"}, "strings"),
    ("ligature look-alike", {"properties": {"n": {"pattern": "^[a-z]+$"}}}, {"n": "\ufb01le"}, "strings"),
    # invisible and control characters
    ("a trailing newline against $", REPO_PATTERN, {"repo_path": "/srv/app\n"}, "repo_path.pattern"),
    (
        "a null byte before the suffix",
        PATH_WORD,
        {"path": "/etc/passwd\x00.txt"},
        "args: constrained strings",
    ),
    ("a zero-width space", REPO_PATTERN, {"repo_path": "/srv/app\u200b"}, "args: constrained strings"),
    ("a right-to-left override", REPO_PATTERN, {"repo_path": "/srv/\u202eppa"}, "args: constrained strings"),
    ("a lone surrogate", REPO_PATTERN, {"repo_path": "/srv/\ud800"}, "args: constrained strings"),
    ("a C1 control character", REPO_PATTERN, {"repo_path": "/srv/app\x85"}, "args: constrained strings"),
    # type confusion
    ("a numeric string against maximum", MAX_100, {"a": "1000"}, "a.type, implied by maximum"),
    ("True as 1 against maximum 0", {"properties": {"a": {"maximum": 0}}}, {"a": True}, "a.type, implied"),
    ("True as 1 against an enum", {"properties": {"a": {"enum": [1]}}}, {"a": True}, "a.enum"),
    ("False as 0 against const", {"properties": {"a": {"const": 0}}}, {"a": False}, "a.const"),
    ("NaN against maximum", MAX_100, {"a": float("nan")}, "args: constrained numbers must be finite"),
    ("infinity against maximum", MAX_100, {"a": float("inf")}, "args: constrained numbers must be finite"),
    (
        "minus infinity against minimum",
        MIN_0,
        {"a": float("-inf")},
        "args: constrained numbers must be finite",
    ),
    ("a huge int against maximum", MAX_100, {"a": 10**400}, "a.maximum"),
    ("a huge negative int against minimum", MIN_0, {"a": -(10**400)}, "a.minimum"),
    (
        "a huge int that overflows multipleOf",
        {"properties": {"a": {"multipleOf": 0.5}}},
        {"a": 10**400},
        "args",
    ),
    (
        "a list where a string is expected",
        REPO_PATTERN,
        {"repo_path": ["/srv/app", "/"]},
        "implied by pattern",
    ),
    ("a list around an allowed value", REPO_ENUM, {"repo_path": ["/srv/app"]}, "repo_path.enum"),
    ("a list where a number is expected", MAX_100, {"a": [1000]}, "a.type, implied by maximum"),
    ("an object where a number is expected", MAX_100, {"a": {"value": 1000}}, "a.type, implied by maximum"),
    (
        "an object where a string is expected",
        REPO_PATTERN,
        {"repo_path": {"path": "/"}},
        "implied by pattern",
    ),
    # keys that differ by case, width or separator, and omitted arguments
    ("the key in another case", MAX_100, {"A": 1000}, "args: constrained names must be spelled exactly"),
    ("the key in fullwidth", MAX_100, {"\uff41": 1000}, "args: constrained keys"),
    ("the key with a dash", REPO_ENUM, {"repo-path": "/"}, "args: constrained names must be spelled exactly"),
    ("the key in camelCase", REPO_ENUM, {"repoPath": "/"}, "args: constrained names must be spelled exactly"),
    ("the key with a trailing underscore", REPO_ENUM, {"repo_path_": "/"}, "args: constrained names"),
    ("the argument left out for the child's default", REPO_ENUM, {}, "args.required, implied"),
    ("both the exact key and a look-alike", MAX_100, {"a": 1, "A": 1000}, "args: constrained names"),
    # extra nesting and wrong shapes inside
    (
        "a nested key in another case",
        {"properties": {"opts": {"properties": {"depth": {"maximum": 3}}}}},
        {"opts": {"Depth": 99}},
        "args: constrained names must be spelled exactly",
    ),
    (
        "the nested constrained key left out",
        {"properties": {"opts": {"properties": {"depth": {"maximum": 3}}}}},
        {"opts": {}},
        "opts.required, implied",
    ),
    (
        "a look-alike deep inside a list",
        {"properties": {"tags": {"items": {"enum": ["a", "b"]}}}},
        {"tags": ["a", ["b", ["\uff41"]]]},
        "args: constrained strings",
    ),
    (
        "a nested list against items",
        {"properties": {"tags": {"items": {"enum": ["a", "b"]}}}},
        {"tags": ["a", ["b"]]},
        "tags.items.enum",
    ),
    (
        "two types in anyOf, neither satisfied",
        {"properties": {"a": {"anyOf": [{"maximum": 5}, {"pattern": "^x"}]}}},
        {"a": "100"},
        "a.anyOf",
    ),
]


@pytest.mark.parametrize(
    ("fragment", "wire", "rule"), [b[1:] for b in BYPASSES], ids=[b[0] for b in BYPASSES]
)
def test_argument_bypass_attempts_are_refused(
    fragment: dict[str, Any], wire: dict[str, Any], rule: str
) -> None:
    entry = _entry("repo.tool", {"repo_path": {}, "a": {}, "path": {}})
    policy = _policy(tools={"repo.tool": {"args": fragment}})
    error = _denied(policy, entry, wire)
    assert rule in str(error)
    assert str(error).startswith('repo.tool is denied by policy (policy.tools["repo.tool"].args')


# Values that look odd but are exactly what the constraint allows, or fall outside what it names.
LEGITIMATE: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("the allowed repository", REPO_ENUM, {"repo_path": "/srv/app"}),
    ("a matching path", REPO_PATTERN, {"repo_path": "/srv/app"}),
    ("ascii digits", DIGITS, {"count": "0042"}),
    ("ascii letters in any case under (?i)", CASELESS, {"name": "KeLvIn"}),
    ("a number on the bound", MAX_100, {"a": 100}),
    ("an integral float on the bound", MAX_100, {"a": 100.0}),
    ("a precomposed accent", {"properties": {"n": {"enum": ["é"]}}}, {"n": "é"}),
    (
        "unicode text where a pattern allows it",
        {"properties": {"n": {"pattern": "^.+$"}}},
        {"n": "日本語のメモ"},
    ),
    ("tabs and newlines are text", {"properties": {"n": {"maxLength": 20}}}, {"n": "a\tb\r\nc"}),
    (
        "an unconstrained argument is not the policy's business",
        REPO_ENUM,
        {"repo_path": "/srv/app", "a": "…\uff46\x00"},
    ),
    ("an unconstrained NaN", MAX_100, {"a": 1, "b": float("nan")}),
    ("a forbidden property left out", {"properties": {"force": False}}, {"a": 1}),
    ("a free property left out", {"properties": {"a": True, "b": {}}}, {}),
    ("an explicit empty required", {"properties": {"a": {"maximum": 5}}, "required": []}, {}),
    ("not keeps its meaning", {"properties": {"a": {"not": {"maximum": 5}}}}, {"a": 6}),
    ("an ipv4 format", {"properties": {"host": {"format": "ipv4"}}}, {"host": "10.0.0.1"}),
    ("a dollar inside a class", {"properties": {"n": {"pattern": "^[$a]+$"}}}, {"n": "$a$"}),
    ("an escaped dollar", {"properties": {"n": {"pattern": "^\\$[0-9]+$"}}}, {"n": "$42"}),
]


@pytest.mark.parametrize(("fragment", "wire"), [b[1:] for b in LEGITIMATE], ids=[b[0] for b in LEGITIMATE])
def test_legitimate_arguments_pass_the_constraints(fragment: dict[str, Any], wire: dict[str, Any]) -> None:
    entry = _entry("repo.tool", {"repo_path": {}, "a": {}, "b": {}})
    _policy(tools={"repo.tool": {"args": fragment}}).check_arguments(entry, wire)


@pytest.mark.parametrize(
    ("fragment", "wire", "rule"),
    [
        ({"properties": {"force": False}}, {"force": True}, "args.properties.force.not"),
        ({"properties": {"a": {"not": {"maximum": 5}}}}, {"a": 3}, "a.not"),
        # Under `not` no type is implied: that would let the string through.
        ({"properties": {"a": {"not": {"maximum": 5}}}}, {"a": "x"}, "a.not"),
        ({"properties": {"host": {"format": "ipv4"}}}, {"host": "999.0.0.1"}, "host.format"),
        ({"properties": {"n": {"pattern": "^\\$[0-9]+$"}}}, {"n": "$42\n"}, "n.pattern"),
    ],
)
def test_forbidding_negating_and_format_keywords_are_enforced(
    fragment: dict[str, Any], wire: dict[str, Any], rule: str
) -> None:
    entry = _entry("repo.tool", {"a": {}})
    assert rule in _denied(_policy(tools={"repo.tool": {"args": fragment}}), entry, wire).rule


def test_a_long_value_is_shortened_in_the_message_but_the_rule_stays(real: Catalog) -> None:
    error = _denied(_policy(**GET_SUM_MAX_100), _get(real, "everything.get_sum"), {"a": 10**400, "b": 1})
    message = str(error)
    assert len(message) < 300
    assert "characters) is greater than the maximum of 100" in message
    assert error.rule.endswith("properties.a.maximum")


@pytest.mark.parametrize(
    ("arguments", "child_gets", "allowed"),
    [
        ({"repo_path": "/srv/app"}, "/srv/app", True),
        ({"repo_path": "/etc"}, "/etc", False),
        ({"repo-path": "/etc"}, "/etc", False),
        # Both spellings at once: the later one is what the child receives, so that one is checked.
        ({"repo_path": "/srv/app", "repo-path": "/etc"}, "/etc", False),
        ({"repo-path": "/etc", "repo_path": "/srv/app"}, "/srv/app", True),
    ],
)
def test_constraints_see_exactly_the_wire_arguments_the_child_will_get(
    arguments: dict[str, Any], child_gets: str, allowed: bool
) -> None:
    entry = _entry("repo.status", {"repo-path": {"type": "string"}})
    assert entry.argument_names == {"repo_path": "repo-path"}
    policy = _policy(tools={"repo.status": {"args": {"properties": {"repo-path": {"enum": ["/srv/app"]}}}}})
    wire = prepare_arguments(entry, arguments)
    assert wire == {"repo-path": child_gets}
    if allowed:
        policy.check_arguments(entry, wire)
    else:
        error = _denied(policy, entry, wire)
        assert error.rule == 'policy.tools["repo.status"].args.properties["repo-path"].enum'
        assert "argument repo-path: '/etc' is not one of ['/srv/app']" in str(error)


def test_a_constraint_written_with_the_python_name_fails_closed() -> None:
    entry = _entry("repo.status", {"repo-path": {"type": "string"}})
    policy = _policy(tools={"repo.status": {"args": {"properties": {"repo_path": {"enum": ["/srv/app"]}}}}})
    wire = prepare_arguments(entry, {"repo_path": "/srv/app"})
    error = _denied(policy, entry, wire)
    assert "'repo-path' looks like the constrained 'repo_path'" in str(error)
    assert policy.diagnostics([entry]) == [
        "policy.tools[\"repo.status\"].args.properties.repo_path: the tool takes no 'repo_path' "
        "(its wire names: repo-path)"
    ]


def test_none_for_a_constrained_optional_argument_cannot_fall_back_to_the_childs_default(
    real: Catalog,
) -> None:
    entry = _get(real, "git.git_log")
    policy = _policy(tools={"git.git_log": {"args": {"properties": {"max_count": {"maximum": 20}}}}})
    wire = prepare_arguments(entry, {"repo_path": "/srv/app", "max_count": None})
    assert "max_count" not in wire
    error = _denied(policy, entry, wire)
    assert "'max_count' is a required property" in str(error)
    assert "opts out" in str(error)
    policy.check_arguments(entry, prepare_arguments(entry, {"repo_path": "/srv/app", "max_count": 20}))


def test_deeply_nested_arguments_are_checked_without_recursion() -> None:
    entry = _entry("repo.tool", {"a": {}})
    policy = _policy(tools={"repo.tool": {"args": {"properties": {"a": {"type": "array"}}}}})
    value: Any = "\uff41"
    for _ in range(50_000):
        value = [value]
    assert "constrained strings" in str(_denied(policy, entry, {"a": value}))


# ---- quotas -------------------------------------------------------------------------------------


def test_max_tool_calls_caps_the_calls_of_one_execution(real: Catalog) -> None:
    policy = _policy(max_tool_calls=3)
    quota = policy.new_execution()
    for name in ("time.get_current_time", "git.git_status", "time.get_current_time"):
        quota.acquire(_get(real, name))
    with pytest.raises(QuotaExceeded) as caught:
        quota.acquire(_get(real, "memory.read_graph"))
    error = caught.value
    assert (
        str(error) == "memory.read_graph: quota of 3 tool calls per execution reached (policy.max_tool_calls)"
    )
    assert (error.kind, error.quota, error.limit, error.retry_after) == (
        "QuotaExceeded",
        "policy.max_tool_calls",
        3,
        None,
    )
    assert isinstance(error, ToolCallError)
    assert quota.calls == 3
    policy.new_execution().acquire(_get(real, "memory.read_graph"))  # the next execution starts afresh


def test_a_quota_of_zero_refuses_the_first_call(real: Catalog) -> None:
    with pytest.raises(QuotaExceeded, match="quota of 0 tool calls"):
        _policy(max_tool_calls=0).new_execution().acquire(_get(real, "time.get_current_time"))


def test_max_calls_caps_one_tool_per_execution(real: Catalog) -> None:
    policy = _policy(tools={"everything.get_sum": {"max_calls": 5}})
    quota = policy.new_execution()
    get_sum, echo = _get(real, "everything.get_sum"), _get(real, "everything.echo")
    for _ in range(5):
        quota.acquire(get_sum)
    with pytest.raises(QuotaExceeded) as caught:
        quota.acquire(get_sum)
    assert str(caught.value) == (
        "everything.get_sum: quota of 5 calls per execution reached "
        '(policy.tools["everything.get_sum"].max_calls)'
    )
    assert caught.value.quota == 'policy.tools["everything.get_sum"].max_calls'
    assert caught.value.limit == 5
    for _ in range(10):
        quota.acquire(echo)
    policy.new_execution().acquire(get_sum)


def test_a_refused_call_counts_against_no_quota(real: Catalog) -> None:
    clock = FakeClock()
    policy = _policy(
        clock,
        max_tool_calls=3,
        tools={"everything.get_sum": {"max_calls": 1, "rate": {"calls": 1, "per_seconds": 60}}},
    )
    get_sum, echo = _get(real, "everything.get_sum"), _get(real, "everything.echo")
    first = policy.new_execution()
    first.acquire(get_sum)
    with pytest.raises(QuotaExceeded, match="max_calls"):
        first.acquire(get_sum)
    second = policy.new_execution()
    with pytest.raises(QuotaExceeded, match="rate"):
        second.acquire(get_sum)  # the rate refuses it: the execution's counts stay at zero
    assert second.calls == 0
    for _ in range(3):
        second.acquire(echo)
    assert second.calls == 3


def test_check_call_counts_only_calls_that_pass_access_and_arguments(real: Catalog) -> None:
    policy = _policy(deny=["git.git_commit"], max_tool_calls=1, **GET_SUM_MAX_100)
    quota = policy.new_execution()
    with pytest.raises(PolicyDenied):
        policy.check_call(_get(real, "git.git_commit"), {}, quota)
    with pytest.raises(PolicyDenied):
        policy.check_call(_get(real, "everything.get_sum"), {"a": 101, "b": 0}, quota)
    assert quota.calls == 0
    policy.check_call(_get(real, "everything.get_sum"), {"a": 100, "b": 0}, quota)
    with pytest.raises(QuotaExceeded):
        policy.check_call(_get(real, "everything.get_sum"), {"a": 1, "b": 0}, quota)


RATE_3_PER_60: dict[str, Any] = {"tools": {"everything.get_sum": {"rate": {"calls": 3, "per_seconds": 60}}}}


def test_the_rate_window_slides_with_the_clock(real: Catalog) -> None:
    clock = FakeClock()
    policy = _policy(clock, **RATE_3_PER_60)
    get_sum = _get(real, "everything.get_sum")

    def attempt(at: float) -> float | None:
        """The retry delay if the call at `at` is refused, else None."""
        clock.now = at
        try:
            policy.new_execution().acquire(get_sum)
        except QuotaExceeded as exc:
            return exc.retry_after
        return None

    assert [attempt(t) for t in (0, 10, 20)] == [None, None, None]
    assert attempt(30) == pytest.approx(30.0)
    assert attempt(59.9) == pytest.approx(0.1)
    assert attempt(60) is None  # the call at 0 left the window
    assert attempt(65) == pytest.approx(5.0)  # 10, 20 and 60 are in it
    assert attempt(70) is None
    assert attempt(200) is None
    assert [attempt(200.5), attempt(201)] == [None, None]
    assert attempt(259.99) == pytest.approx(0.01)


def test_a_rate_refusal_names_the_rate_and_when_to_retry(real: Catalog) -> None:
    clock = FakeClock()
    policy = _policy(clock, tools={"everything.get_sum": {"rate": {"calls": 10, "per_seconds": 60}}})
    quota = policy.new_execution()
    for second in range(10):
        clock.now = float(second)
        quota.acquire(_get(real, "everything.get_sum"))
    clock.now = 47.5
    with pytest.raises(QuotaExceeded) as caught:
        quota.acquire(_get(real, "everything.get_sum"))
    assert str(caught.value) == (
        "everything.get_sum: rate limit of 10 calls per 60 seconds reached "
        '(policy.tools["everything.get_sum"].rate); try again in 12.5 s'
    )
    assert (caught.value.quota, caught.value.limit) == ('policy.tools["everything.get_sum"].rate', 10)
    assert caught.value.retry_after == pytest.approx(12.5)


def test_the_rate_is_shared_by_every_execution_of_the_gateway(real: Catalog) -> None:
    clock = FakeClock()
    policy = _policy(clock, **RATE_3_PER_60)
    get_sum = _get(real, "everything.get_sum")
    executions = [policy.new_execution() for _ in range(3)]
    for quota in executions:
        quota.acquire(get_sum)
    with pytest.raises(QuotaExceeded):
        policy.new_execution().acquire(get_sum)
    other = _policy(clock, **RATE_3_PER_60)  # another gateway keeps its own windows
    other.new_execution().acquire(get_sum)


def test_each_tool_has_its_own_rate_window(real: Catalog) -> None:
    clock = FakeClock()
    rate = {"rate": {"calls": 1, "per_seconds": 10}}
    policy = _policy(clock, tools={"everything.get_sum": rate, "everything.echo": rate})
    quota = policy.new_execution()
    quota.acquire(_get(real, "everything.get_sum"))
    quota.acquire(_get(real, "everything.echo"))
    quota.acquire(_get(real, "time.get_current_time"))  # no rate of its own
    with pytest.raises(QuotaExceeded, match=r"everything\.echo: rate limit of 1 calls per 10 seconds"):
        quota.acquire(_get(real, "everything.echo"))


def test_the_rate_limiter_stands_alone_with_an_injected_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    rate = (
        PolicyConfig.model_validate({"tools": {"a.b": {"rate": {"calls": 2, "per_seconds": 1.5}}}})
        .tools["a.b"]
        .rate
    )
    assert rate is not None
    limiter.acquire("a.b", rate, "here")
    limiter.acquire("a.b", rate, "here")
    with pytest.raises(QuotaExceeded, match=r"2 calls per 1\.5 seconds reached \(here\)"):
        limiter.acquire("a.b", rate, "here")
    clock.now = 1.5
    limiter.acquire("a.b", rate, "here")
    assert isinstance(_policy().new_execution(), ExecutionQuota)


# ---- diagnostics --------------------------------------------------------------------------------


def test_diagnostics_point_at_rules_that_match_no_tool(real: Catalog) -> None:
    policy = _policy(
        deny=["git.git_comit", "filesystem.write_*"],
        hidden=["memroy.*"],
        tools={
            "everything.get_summ": {"max_calls": 1},
            "git.git_status": {"args": {"properties": {"repository": {"enum": ["/srv"]}}}},
        },
    )
    assert policy.diagnostics(real) == [
        'policy.deny[0]: "git.git_comit" matches no tool',
        'policy.hidden[0]: "memroy.*" matches no tool',
        'policy.tools["everything.get_summ"]: no such tool',
        "policy.tools[\"git.git_status\"].args.properties.repository: the tool takes no 'repository' "
        "(its wire names: repo_path)",
    ]
    assert _policy(deny=["git.*"], tools={"everything.get_sum": {"max_calls": 1}}).diagnostics(real) == []
