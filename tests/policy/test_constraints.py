"""Argument constraints (`policy.tools[name].args`): they tighten, fail closed, and see the wire form."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.catalog import Catalog, prepare_arguments
from gateway.policy.config import PolicyConfig
from tests.policy.helpers import denied, get, made_up_entry, policy_of
from tests.real_servers import snapshot_catalog


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


# ---- argument constraints -----------------------------------------------------------------------

GET_SUM_MAX_100: dict[str, Any] = {
    "tools": {"everything.get_sum": {"args": {"properties": {"a": {"maximum": 100}}}}}
}


def test_arguments_within_the_constraints_pass(real: Catalog) -> None:
    policy = policy_of(**GET_SUM_MAX_100)
    entry = get(real, "everything.get_sum")
    for a in (100, 99.5, -(10**400), 0, 1e-300):
        policy.check_arguments(entry, {"a": a, "b": 1})


def test_a_violated_constraint_names_the_rule_and_the_field(real: Catalog) -> None:
    error = denied(policy_of(**GET_SUM_MAX_100), get(real, "everything.get_sum"), {"a": 150, "b": 1})
    assert str(error) == (
        "everything.get_sum is denied by policy "
        '(policy.tools["everything.get_sum"].args.properties.a.maximum): '
        "argument a: 150 is greater than the maximum of 100"
    )
    assert error.rule == 'policy.tools["everything.get_sum"].args.properties.a.maximum'
    assert error.kind == "PolicyDenied"


def test_tools_without_constraints_are_not_checked(real: Catalog) -> None:
    policy = policy_of(**GET_SUM_MAX_100)
    policy.check_arguments(
        get(real, "everything.echo"), {"message": "\x00\uff46\uff55\uff4c\uff4c\u202e", "x": float("nan")}
    )


REPO_ENUM = {"properties": {"repo_path": {"enum": ["/srv/app"]}}}
REPO_PATTERN = {"properties": {"repo_path": {"pattern": "^/srv/[a-z]+$"}}}
PATH_WORD = {"properties": {"path": {"pattern": "^[\\w/.]+\\.txt$"}}}
DIGITS = {"properties": {"count": {"pattern": "^\\d+$"}}}
CASELESS = {"properties": {"name": {"pattern": "(?i)^[a-z]+$"}}}
MAX_100 = {"properties": {"a": {"maximum": 100}}}
MIN_0 = {"properties": {"a": {"minimum": 0}}}
PREFIX = {"properties": {"path": {"pattern": "^/srv/safe/.*$"}}}
ONE_LINE = {"properties": {"n": {"pattern": "^.+$"}}}
UNIQUE_TAGS = {"properties": {"tags": {"uniqueItems": True}}}
NOT_A_PATH = "args: constrained strings must be normalised paths"

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
    # paths that leave an allowed prefix
    ("a parent segment after the prefix", PREFIX, {"path": "/srv/safe/../private"}, NOT_A_PATH),
    ("a parent segment at the end", PREFIX, {"path": "/srv/safe/.."}, NOT_A_PATH),
    ("a dot segment", PREFIX, {"path": "/srv/safe/./key"}, NOT_A_PATH),
    ("a percent-encoded parent", PREFIX, {"path": "/srv/safe/%2e%2e/private"}, NOT_A_PATH),
    ("an upper-case percent-encoded parent", PREFIX, {"path": "/srv/safe/%2E%2E/private"}, NOT_A_PATH),
    ("a half-encoded parent", PREFIX, {"path": "/srv/safe/.%2e/private"}, NOT_A_PATH),
    ("a double-encoded parent", PREFIX, {"path": "/srv/safe/%252e%252e/private"}, NOT_A_PATH),
    ("a triple-encoded parent", PREFIX, {"path": "/srv/safe/%25252e%25252E/private"}, NOT_A_PATH),
    ("an overlong UTF-8 parent", PREFIX, {"path": "/srv/safe/%c0%ae%c0%ae/private"}, NOT_A_PATH),
    ("an IIS-encoded parent", PREFIX, {"path": "/srv/safe/%u002e%u002e/private"}, NOT_A_PATH),
    ("a parent behind an encoded slash", PREFIX, {"path": "/srv/safe/..%2fprivate"}, NOT_A_PATH),
    ("a parent with a path parameter", PREFIX, {"path": "/srv/safe/..;/private"}, NOT_A_PATH),
    ("a parent before a query", PREFIX, {"path": "/srv/safe/..?x=1"}, NOT_A_PATH),
    ("a parent before a fragment", PREFIX, {"path": "/srv/safe/..#top"}, NOT_A_PATH),
    (
        "a whole string that encodes a parent",
        {"properties": {"n": {"maxLength": 9}}},
        {"n": "%2e%2e"},
        NOT_A_PATH,
    ),
    ("a parent behind a backslash", PREFIX, {"path": "/srv/safe/..\\private"}, NOT_A_PATH),
    ("a parent behind an encoded backslash", PREFIX, {"path": "/srv/safe/..%5Cprivate"}, NOT_A_PATH),
    (
        "a windows parent",
        {"properties": {"path": {"pattern": "^C:\\\\safe\\\\"}}},
        {"path": "C:\\safe\\..\\x"},
        NOT_A_PATH,
    ),
    (
        "an escaped letter past a deny pattern",
        {"properties": {"path": {"not": {"pattern": "^/srv/secrets"}}}},
        {"path": "/srv/%73ecrets/key"},
        NOT_A_PATH,
    ),
    (
        "a double-escaped letter past a deny pattern",
        {"properties": {"path": {"not": {"pattern": "^/srv/secrets"}}}},
        {"path": "/srv/%2573ecrets/key"},
        NOT_A_PATH,
    ),
    ("a doubled slash", PREFIX, {"path": "/srv/safe//etc/passwd"}, NOT_A_PATH),
    ("a slash and a backslash", PREFIX, {"path": "/srv/safe/\\\\host\\share"}, NOT_A_PATH),
    ("an encoded doubled slash", PREFIX, {"path": "/srv/safe/%2f%2fhost"}, NOT_A_PATH),
    (
        "a parent inside a URL",
        {"properties": {"url": {"pattern": "^https://h/a/"}}},
        {"url": "https://h/a/../b"},
        NOT_A_PATH,
    ),
    (
        "a parent inside a list",
        {"properties": {"paths": {"items": {"pattern": "^/srv/safe/"}}}},
        {"paths": ["/srv/safe/x", "/srv/safe/../y"]},
        NOT_A_PATH,
    ),
    (
        "a parent as a key",
        {"properties": {"files": {"type": "object"}}},
        {"files": {"../x": "text"}},
        "args: constrained keys must be normalised paths",
    ),
    # line terminators that ECMA-262's `.` does not match
    ("a carriage return against .", ONE_LINE, {"n": "a\rb"}, "n.pattern"),
    ("a newline against .", ONE_LINE, {"n": "a\nb"}, "n.pattern"),
    ("a line separator against .", ONE_LINE, {"n": "a\u2028b"}, "n.pattern"),
    ("a paragraph separator against .", ONE_LINE, {"n": "a\u2029b"}, "n.pattern"),
    ("a carriage return after the prefix", PREFIX, {"path": "/srv/safe/key\r/etc/passwd"}, "path.pattern"),
    ("a trailing carriage return", PREFIX, {"path": "/srv/safe/key\r"}, "path.pattern"),
    # what cost time quadratic in the arguments
    (
        "an unanchored pattern on a long string",
        {"properties": {"n": {"pattern": "[a-z]+:[0-9]+"}}},
        {"n": "a" * 1_000_000},
        "n.pattern",
    ),
    ("duplicates that sorting kept apart", UNIQUE_TAGS, {"tags": [[1], [True], [1]]}, "tags.uniqueItems"),
    ("1 and 1.0 as duplicates", UNIQUE_TAGS, {"tags": [[1], [True], [1.0]]}, "tags.uniqueItems"),
    (
        "objects in two key orders",
        UNIQUE_TAGS,
        {"tags": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]},
        "tags.uniqueItems",
    ),
    (
        "200,000 mixed items with one duplicate",
        UNIQUE_TAGS,
        {"tags": [0, "a", *([i] for i in range(200_000)), [0.0]]},
        "tags.uniqueItems",
    ),
]


@pytest.mark.parametrize(
    ("fragment", "wire", "rule"), [b[1:] for b in BYPASSES], ids=[b[0] for b in BYPASSES]
)
def test_argument_bypass_attempts_are_refused(
    fragment: dict[str, Any], wire: dict[str, Any], rule: str
) -> None:
    entry = made_up_entry("repo.tool", {"repo_path": {}, "a": {}, "path": {}})
    policy = policy_of(tools={"repo.tool": {"args": fragment}})
    error = denied(policy, entry, wire)
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
    ("a normalised path under the prefix", PREFIX, {"path": "/srv/safe/notes/today.txt"}),
    ("dots inside names, a dotfile and three dots", PREFIX, {"path": "/srv/safe/a..b/.profile/..."}),
    ("a trailing slash", PREFIX, {"path": "/srv/safe/"}),
    ("a percent sign that encodes no dot", PREFIX, {"path": "/srv/safe/100%25/x"}),
    ("an escaped space, which has no plain form", PREFIX, {"path": "/srv/safe/my%20notes"}),
    (
        "a URL's scheme slashes",
        {"properties": {"url": {"pattern": "^https://api\\.example\\.com/"}}},
        {"url": "https://api.example.com/v1/items"},
    ),
    (
        "a leading double slash naming a host",
        {"properties": {"share": {"maxLength": 40}}},
        {"share": "//host/share"},
    ),
    ("a sentence with dots", {"properties": {"n": {"maxLength": 40}}}, {"n": "Wait... what? 1.5 is fine."}),
    (
        "a query that mentions dots",
        {"properties": {"url": {"maxLength": 40}}},
        {"url": "https://h/a?up=../b"},
    ),
    ("a carriage return that a class allows", {"properties": {"n": {"pattern": "^[^/]+$"}}}, {"n": "a\rb"}),
    (
        "true and 1 are different items",
        UNIQUE_TAGS,
        {"tags": [True, 1, "1", [1], [True], {"a": 1}, {"a": True}]},
    ),
    ("200,000 distinct mixed items", UNIQUE_TAGS, {"tags": [0, "a", *([i] for i in range(200_000))]}),
]


@pytest.mark.parametrize(("fragment", "wire"), [b[1:] for b in LEGITIMATE], ids=[b[0] for b in LEGITIMATE])
def test_legitimate_arguments_pass_the_constraints(fragment: dict[str, Any], wire: dict[str, Any]) -> None:
    entry = made_up_entry("repo.tool", {"repo_path": {}, "a": {}, "b": {}})
    policy_of(tools={"repo.tool": {"args": fragment}}).check_arguments(entry, wire)


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
    entry = made_up_entry("repo.tool", {"a": {}})
    assert rule in denied(policy_of(tools={"repo.tool": {"args": fragment}}), entry, wire).rule


def test_a_long_value_is_shortened_in_the_message_but_the_rule_stays(real: Catalog) -> None:
    error = denied(policy_of(**GET_SUM_MAX_100), get(real, "everything.get_sum"), {"a": 10**400, "b": 1})
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
    entry = made_up_entry("repo.status", {"repo-path": {"type": "string"}})
    assert entry.argument_names == {"repo_path": "repo-path"}
    policy = policy_of(tools={"repo.status": {"args": {"properties": {"repo-path": {"enum": ["/srv/app"]}}}}})
    wire = prepare_arguments(entry, arguments)
    assert wire == {"repo-path": child_gets}
    if allowed:
        policy.check_arguments(entry, wire)
    else:
        error = denied(policy, entry, wire)
        assert error.rule == 'policy.tools["repo.status"].args.properties["repo-path"].enum'
        assert "argument repo-path: '/etc' is not one of ['/srv/app']" in str(error)


def test_a_constraint_written_with_the_python_name_fails_closed() -> None:
    entry = made_up_entry("repo.status", {"repo-path": {"type": "string"}})
    policy = policy_of(tools={"repo.status": {"args": {"properties": {"repo_path": {"enum": ["/srv/app"]}}}}})
    wire = prepare_arguments(entry, {"repo_path": "/srv/app"})
    error = denied(policy, entry, wire)
    assert "'repo-path' looks like the constrained 'repo_path'" in str(error)
    assert policy.diagnostics([entry]) == [
        "policy.tools[\"repo.status\"].args.properties.repo_path: the tool takes no 'repo_path' "
        "(its wire names: repo-path)"
    ]


def test_none_for_a_constrained_optional_argument_cannot_fall_back_to_the_childs_default(
    real: Catalog,
) -> None:
    entry = get(real, "git.git_log")
    policy = policy_of(tools={"git.git_log": {"args": {"properties": {"max_count": {"maximum": 20}}}}})
    wire = prepare_arguments(entry, {"repo_path": "/srv/app", "max_count": None})
    assert "max_count" not in wire
    error = denied(policy, entry, wire)
    assert "'max_count' is a required property" in str(error)
    assert "opts out" in str(error)
    policy.check_arguments(entry, prepare_arguments(entry, {"repo_path": "/srv/app", "max_count": 20}))


def test_deeply_nested_arguments_are_checked_without_recursion() -> None:
    entry = made_up_entry("repo.tool", {"a": {}})
    policy = policy_of(tools={"repo.tool": {"args": {"properties": {"a": {"type": "array"}}}}})
    value: Any = "\uff41"
    for _ in range(50_000):
        value = [value]
    assert "constrained strings" in str(denied(policy, entry, {"a": value}))


def test_a_path_that_is_not_normalised_is_refused_naming_the_segment() -> None:
    entry = made_up_entry("repo.tool", {"path": {}})
    policy = policy_of(tools={"repo.tool": {"args": PREFIX}})
    error = denied(policy, entry, {"path": "/srv/safe/%2e%2e/private"})
    assert str(error) == (
        'repo.tool is denied by policy (policy.tools["repo.tool"].args: constrained strings must be '
        "normalised paths): argument path: a '..' segment, once percent-decoded"
    )
    error = denied(policy, entry, {"path": "/srv/safe//private"})
    assert str(error).endswith("argument path: an empty segment ('//')")
    error = denied(policy, entry, {"path": "/srv/safe/..;/private"})
    assert str(error).endswith("argument path: a '..' segment ('..;')")


@pytest.mark.parametrize(
    ("fragment", "complaint"),
    [
        (
            {"properties": {"n": {"pattern": "^(a)\\1$"}}},
            "properties.n.pattern: '^(a)\\\\1$' cannot be used: \\1 is a backreference, which cannot be "
            "matched in linear time (patterns are ECMA-262, run by RE2 in linear time)",
        ),
        (
            {"properties": {"n": {"pattern": "^(?!admin)"}}},
            "properties.n.pattern: '^(?!admin)' cannot be used: look",
        ),
        ({"properties": {"n": {"pattern": "a{1001}"}}}, "RE2 cannot run it (invalid repetition size"),
        ({"properties": {"n": {"pattern": "(?s)^.*$"}}}, "'(?s' opens no ECMA-262 group"),
        (
            {"properties": {"h": {"patternProperties": {"^(?=x)": {}}}}},
            'properties.h.patternProperties["^(?=x)"]: ',
        ),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_a_config_error_naming_it(
    fragment: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyConfig.model_validate({"tools": {"repo.tool": {"args": fragment}}})
    assert complaint in caught.value.errors()[0]["msg"]


def test_a_pattern_property_is_matched_as_ecma_262_and_what_it_misses_is_additional() -> None:
    entry = made_up_entry("repo.tool", {"headers": {}})
    fragment = {
        "properties": {"headers": {"patternProperties": {"^x-.+$": {}}, "additionalProperties": False}}
    }
    policy = policy_of(tools={"repo.tool": {"args": fragment}})
    policy.check_arguments(entry, {"headers": {"x-trace": "1"}})
    error = denied(policy, entry, {"headers": {"x-trace\u2028": "1"}})
    assert error.rule.endswith("properties.headers.additionalProperties.not")
