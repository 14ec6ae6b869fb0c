"""Validators whose cost is linear in the instance: hashed uniqueItems, ECMA-262 patterns on RE2."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from gateway.shared.json_schema import (
    UnsupportedPattern,
    all_unique,
    best_error,
    ecma_regex,
    ecma_to_re2,
    json_identity,
    linear_validator,
    short_message,
)

UNIQUE: dict[str, Any] = {"type": "array", "uniqueItems": True}


def child(schema: dict[str, Any]) -> Validator:
    """A validator as the gateway builds one for a child's inputSchema."""
    return linear_validator(schema, skip_unrunnable_patterns=True)


def team(schema: dict[str, Any]) -> Validator:
    """A validator as the gateway builds one for a team's constraint."""
    return linear_validator(schema, skip_unrunnable_patterns=False)


def messages(validator: Validator, instance: Any) -> list[str]:
    return sorted(error.message for error in validator.iter_errors(instance))


# ---- uniqueItems ---------------------------------------------------------------------------------


def test_a_200_000_item_array_of_mixed_types_is_checked_for_uniqueness() -> None:
    # jsonschema compares every pair of items that do not sort: 2 * 10**10 comparisons here.
    items: list[Any] = [0, "a", *([i] for i in range(200_000))]
    assert team(UNIQUE).is_valid(items)
    assert not team(UNIQUE).is_valid([*items, [199_999.0]])


def test_50_000_objects_holding_arrays_and_objects_are_checked_for_uniqueness() -> None:
    items: list[Any] = [{"k": i, "v": [i, {"w": str(i)}]} for i in range(50_000)]
    assert team(UNIQUE).is_valid(items)
    assert not team(UNIQUE).is_valid([*items, {"v": [7, {"w": "7"}], "k": 7.0}])


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([True, 1], True),
        ([False, 0], True),
        ([None, False, 0, "", [], {}], True),
        (["1", 1], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([{"a": 1}, {"a": 1, "b": None}], True),
        ([[1], [True], [1]], False),  # jsonschema's sorted path misses this one (1 == True in Python)
        ([[1], [True], [1.0]], False),
        ([[{"a": 1}], [{"a": True}], [{"a": 1.0}]], False),
        ([[[[1]]], [[[1.0]]]], False),
        ([{"a": [1, {"b": True}]}, {"a": [1, {"b": 1}]}], True),
        ([[1, 2], [2, 1]], True),
        ([[], []], False),
        ([{}, {}], False),
        ([2**64, float(2**64)], False),
        ([2**53 + 1, float(2**53)], True),
        ([10**400, 10**400], False),
        (["a", "a"], False),
        (["é", "e\u0301"], True),  # equal as JSON means equal code points, not equal text
    ],
)
def test_uniqueness_follows_json_equality(items: list[Any], unique: bool) -> None:
    assert all_unique(items) is unique
    assert team(UNIQUE).is_valid(items) is unique


def test_equal_values_get_the_same_identity_and_others_never_do() -> None:
    table: dict[object, int] = {}
    first = json_identity({"a": [1, {"b": None}], "c": "x"}, table)
    assert json_identity({"c": "x", "a": [1.0, {"b": None}]}, table) == first
    others: list[object] = [
        {"a": [1, {"b": False}], "c": "x"},
        {"a": [True, {"b": None}], "c": "x"},
        "x",
        [],
        {},
    ]
    assert first not in {json_identity(other, table) for other in others}


def test_deeply_nested_items_are_compared_without_recursion() -> None:
    def deep(leaf: object) -> object:
        value = leaf
        for _ in range(100_000):
            value = [value]
        return value

    assert not all_unique([deep(1), deep(1.0)])
    assert all_unique([deep(1), deep(True)])


def test_the_non_unique_message_is_jsonschemas() -> None:
    stock = jsonschema.Draft202012Validator(UNIQUE)
    assert (
        messages(team(UNIQUE), [1, 2, 1])
        == messages(stock, [1, 2, 1])
        == ["[1, 2, 1] has non-unique elements"]
    )


# ---- anyOf, oneOf and reporting -----------------------------------------------------------------

LABELS: dict[str, Any] = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
@pytest.mark.parametrize("instance", [["a"], "a", [0], 0, None])
def test_any_of_and_one_of_judge_and_word_as_jsonschema_does(keyword: str, instance: Any) -> None:
    schema = {keyword: [{"type": "array", "items": {"type": "string"}}, {"type": ["string", "array"]}]}
    stock = jsonschema.Draft202012Validator(schema)
    assert team(schema).is_valid(instance) == stock.is_valid(instance)
    assert messages(team(schema), instance) == messages(stock, instance)


def test_a_failing_any_of_branch_keeps_its_first_errors_not_one_per_bad_item() -> None:
    [error] = child(LABELS).iter_errors([0] * 87_000)
    assert error.message.endswith("is not valid under any of the given schemas")
    assert 1 < len(error.context) <= 32  # jsonschema listed all 87,000 before yielding, even for is_valid
    assert not child({"oneOf": LABELS["anyOf"]}).is_valid([0] * 87_000)


def test_the_best_error_is_picked_from_the_first_few_of_an_endless_stream() -> None:
    def endless() -> Iterator[ValidationError]:
        for pulled in range(1_000):
            yield ValidationError(f"error {pulled}", validator="type")  # pyright: ignore[reportArgumentType]
        raise AssertionError("best_error ranked a thousand errors")

    error = best_error(endless())
    assert error is not None
    assert error.message.startswith("error ")
    assert best_error(iter(())) is None


def test_a_long_instance_is_cut_out_of_the_message_and_a_short_one_kept() -> None:
    [long] = child({"type": "string"}).iter_errors([0] * 87_000)
    assert (
        short_message(long)
        == "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, …(261000 characters) is not of type 'string'"
    )
    [short] = child({"type": "string"}).iter_errors(5)
    assert short_message(short) == "5 is not of type 'string'"


def test_unique_items_holds_under_an_older_draft_too() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}], **UNIQUE}
    validator = child(schema)
    assert validator.is_valid([1, "a"])
    assert not validator.is_valid([1, "a", 1.0])
    assert not validator.is_valid(["x"])  # draft-07's array form of items still applies


# ---- ECMA-262 patterns ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        # `.` matches no line terminator
        ("^.+$", "a\rb", False),
        ("^.+$", "a\nb", False),
        ("^.+$", "a\u2028b", False),
        ("^.+$", "a\u2029b", False),
        ("^.+$", "a\u0085b", True),  # NEL is no ECMA-262 line terminator
        ("^.+$", "日本語のメモ", True),
        ("^.$", "😀", True),  # one code point
        # `^` and `$` are the ends of the input
        ("^abc$", "abc\n", False),
        ("^abc$", "x\nabc", False),
        ("abc$", "abc", True),
        # ASCII \d \w \b, ECMA's \s
        ("^\\d+$", "\u0661\u0662", False),
        ("^\\w+$", "é", False),
        ("\\bcat\\b", "a cat!", True),
        ("\\bcat\\b", "écat", True),  # é is no ASCII word character
        ("^\\s$", "\u00a0", True),
        ("^\\s$", "\u2028", True),
        ("^\\s$", "\ufeff", True),
        ("^\\s$", "\u0085", False),
        ("^\\S$", "\u3000", False),
        ("^[^\\s]$", "\u2029", False),
        ("^[\\S]$", "x", True),
        # classes
        ("^[]$", "", False),
        ("a[]", "a", False),
        ("^[^]$", "\n", True),
        ("^[$a]+$", "$a$", True),
        ("^[a-c-]+$", "a-c", True),
        ("^[\\b]$", "\b", True),
        ("^[\\u0041-\\u0043]+$", "ABC", True),
        # escapes
        ("^\\u00e9$", "é", True),
        ("^\\uD83D\\uDE00$", "😀", True),
        ("^\\u{1F600}$", "😀", True),
        ("^\\x41$", "A", True),
        ("^\\cJ$", "\n", True),
        ("^\\0$", "\x00", True),
        ("^\\/\\.\\$$", "/.$", True),
        ("^\\$[0-9]+$", "$42", True),
        # Annex B literals and quantifiers
        ("^a{2}$", "aa", True),
        ("^a{2,}$", "aaa", True),
        ("^a{$", "a{", True),
        ("^a}]$", "a}]", True),
        # groups and flags
        ("^(?<word>[a-z]+)-(?:x|y)$", "abc-y", True),
        ("(?i)^[a-z]+$", "KeLvIn", True),
        ("(?i)^[a-z]+$", "\u0131d", False),  # dotless i folds to nothing ASCII
        # unanchored search
        ("b", "abc", True),
        ("[a-z]+:[0-9]+", "a" * 1_000_000, False),
        # a lone surrogate in the text is matched as U+FFFD
        ("^.$", "\ud800", True),
        ("^a$", "\ud800", False),
    ],
)
def test_patterns_follow_ecma_262(pattern: str, text: str, matches: bool) -> None:
    assert ecma_regex(pattern).search(text) is matches


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("^(a)\\1$", "backreference"),
        ("^(?<n>a)\\k<n>$", "backreference"),
        ("(?=a)", "lookaround"),
        ("(?!a)", "lookaround"),
        ("(?<=a)b", "lookaround"),
        ("(?<!a)b", "lookaround"),
        ("\\a", "not an ECMA-262 escape"),
        ("\\Z", "not an ECMA-262 escape"),
        ("(?s).", "opens no ECMA-262 group"),
        ("(?m)^a", "opens no ECMA-262 group"),
        ("(?u)x", "opens no ECMA-262 group"),
        ("a{1001}", "RE2 cannot run it"),
        ("((a{100}){100}){100}", "RE2 cannot run it"),
        ("\\uD800", "lone surrogate"),
        ("\\x4", "two hex digits"),
        ("[z-a]", "out of order"),
        ("[\\d-z]", "cannot bound a range"),
        ("[a", "never closed"),
        ("a\\", "lone backslash"),
    ],
)
def test_a_pattern_that_cannot_run_here_says_why(pattern: str, why: str) -> None:
    with pytest.raises(UnsupportedPattern, match=why):
        ecma_regex(pattern)


def test_the_translation_spells_out_ecma_262s_dot_and_anchors() -> None:
    translated = ecma_to_re2("^a.$")
    assert translated.startswith("\\Aa[")
    assert translated.endswith("]\\z")
    assert "\\x{2027}\\x{202a}" in translated  # U+2028 and U+2029 are left out


def test_a_team_pattern_that_cannot_run_raises_and_a_childs_is_left_to_the_child() -> None:
    schema = {"type": "string", "pattern": "^(a)\\1$"}
    assert child(schema).is_valid("anything at all")
    with pytest.raises(UnsupportedPattern) as raised:
        team(schema).is_valid("aa")
    assert str(raised.value) == "'^(a)\\\\1$': \\1 is a backreference, which cannot be matched in linear time"


def test_pattern_messages_are_jsonschemas() -> None:
    schema = {"pattern": "^[a-z]+$"}
    stock = jsonschema.Draft202012Validator(schema)
    assert messages(team(schema), "ABC") == messages(stock, "ABC") == ["'ABC' does not match '^[a-z]+$'"]


# ---- patternProperties, additionalProperties, unevaluated* ---------------------------------------

HEADERS: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "patternProperties": {"^x-.+$": {"type": "integer"}},
    "additionalProperties": False,
}


def test_pattern_properties_use_ecma_patterns_for_their_subschemas_and_for_what_is_additional() -> None:
    validator = team(HEADERS)
    assert validator.is_valid({"id": 1, "x-a": 2})
    assert messages(validator, {"x-a": "two"}) == ["'two' is not of type 'integer'"]
    assert messages(validator, {"x-a\r": 2}) == ["'x-a\\r' does not match any of the regexes: '^x-.+$'"]


def test_additional_properties_message_without_patterns_is_jsonschemas() -> None:
    schema = {"properties": {"a": {}}, "additionalProperties": False}
    stock = jsonschema.Draft202012Validator(schema)
    instance = {"a": 1, "b": 2, "c": 3}
    assert messages(team(schema), instance) == messages(stock, instance)


def test_a_childs_unrunnable_pattern_property_names_no_key_and_makes_no_key_additional() -> None:
    schema = {"patternProperties": {"^(?=x)": {"type": "integer"}}, "additionalProperties": False}
    assert child(schema).is_valid({"x": "not an integer", "y": 1})


def test_a_wide_object_is_checked_against_pattern_properties() -> None:
    instance = {f"x-{i}": i for i in range(50_000)}
    assert team(HEADERS).is_valid(instance)
    assert not team(HEADERS).is_valid({**instance, "y": 1})


def test_unevaluated_items_are_refused_and_50_000_evaluated_ones_are_not() -> None:
    schema = {"prefixItems": [{"type": "integer"}], "unevaluatedItems": False}
    assert messages(team(schema), [1, 2, 3]) == ["Unevaluated items are not allowed (2, 3 were unexpected)"]
    assert messages(team(schema), [1, 2, 3]) == messages(jsonschema.Draft202012Validator(schema), [1, 2, 3])
    many: dict[str, Any] = {"items": {"type": "integer"}, "unevaluatedItems": False}
    assert team(many).is_valid(list(range(50_000)))  # jsonschema searched a list once per item
    contains: dict[str, Any] = {"contains": {"type": "integer"}, "unevaluatedItems": False}
    assert team(contains).is_valid(list(range(50_000)))
    assert not team(contains).is_valid([*range(50_000), "x"])


def test_unevaluated_properties_see_properties_patterns_references_and_branches() -> None:
    schema: dict[str, Any] = {
        "$defs": {"base": {"properties": {"a": {}}}},
        "$ref": "#/$defs/base",
        "patternProperties": {"^x-": {}},
        "if": {"properties": {"kind": {"const": "b"}}, "required": ["kind"]},
        "then": {"properties": {"kind": {}, "b": {}}},
        "anyOf": [{"properties": {"c": {"type": "integer"}}}],
        "unevaluatedProperties": False,
    }
    validator = team(schema)
    assert validator.is_valid({"a": 1, "x-y": 2, "c": 3})
    assert validator.is_valid({"kind": "b", "b": 1})
    assert messages(validator, {"a": 1, "b": 2, "d": 3}) == [
        "Unevaluated properties are not allowed ('b', 'd' were unexpected)"
    ]
    assert messages(validator, {"a": 1, "y\n": 2}) == [
        "Unevaluated properties are not allowed ('y\\n' was unexpected)"
    ]


def test_unevaluated_properties_under_a_schema_say_which_are_invalid() -> None:
    schema = {"properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}}
    instance = {"a": "x", "b": 1, "c": "two"}
    assert messages(team(schema), instance) == messages(jsonschema.Draft202012Validator(schema), instance)
    wide = {f"k{i}": i for i in range(50_000)}
    assert team(schema).is_valid(wide)  # jsonschema searched a list once per key


def test_a_2019_09_childs_unevaluated_keywords_are_left_to_the_child() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2019-09/schema", "unevaluatedProperties": False}
    assert child(schema).is_valid({"anything": 1})
