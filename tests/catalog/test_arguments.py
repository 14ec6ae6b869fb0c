"""Tool arguments checked against the child's inputSchema, under the child's own names, before sending."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema.validators import validator_for
from mcp.types import Tool

from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import CatalogEntry
from gateway.errors import ToolCallError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repo-path": {"type": "string"},
        "class": {"type": "integer", "minimum": 0},
        "limit": {"type": ["integer", "null"]},
        "since": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    },
    "required": ["repo-path"],
}


def entry(schema: dict[str, Any] = SCHEMA) -> CatalogEntry:
    return CatalogEntry.from_tool("git", "git", "get_file", Tool(name="get-file", input_schema=schema))


def refusal(arguments: dict[str, Any], schema: dict[str, Any] = SCHEMA) -> str:
    with pytest.raises(ToolCallError) as raised:
        prepare_arguments(entry(schema), arguments)
    return str(raised.value)


def test_python_names_are_mapped_back_to_the_childs_property_names() -> None:
    wire = prepare_arguments(entry(), {"repo_path": "/r", "class_": 3})
    assert wire == {"repo-path": "/r", "class": 3}


def test_the_childs_own_spelling_is_accepted_as_well() -> None:
    assert prepare_arguments(entry(), {"repo-path": "/r"}) == {"repo-path": "/r"}


def test_none_is_dropped_for_an_optional_parameter_that_does_not_take_null() -> None:
    assert prepare_arguments(entry(), {"repo_path": "/r", "class_": None}) == {"repo-path": "/r"}


def test_none_is_kept_for_a_nullable_parameter_by_type_list_or_any_of() -> None:
    wire = prepare_arguments(entry(), {"repo_path": "/r", "limit": None, "since": None})
    assert wire == {"repo-path": "/r", "limit": None, "since": None}


def test_an_unknown_keyword_is_refused_naming_what_the_tool_takes() -> None:
    message = refusal({"repo_path": "/r", "colour": "red", "verbose": True})
    assert message == (
        "git.get_file got unknown argument(s) colour, verbose; "
        "it takes: class_, items, limit, repo_path, since"
    )


def test_thousands_of_unknown_keywords_are_named_ten_at_most_and_counted() -> None:
    message = refusal({"repo_path": "/r", **{f"k{i:05}": 1 for i in range(20_000)}})
    assert message == (
        "git.get_file got unknown argument(s) k00000, k00001, k00002, k00003, k00004, k00005, k00006, "
        "k00007, k00008, k00009 and 19,990 more; it takes: class_, items, limit, repo_path, since"
    )


def test_an_unknown_keyword_passed_as_none_is_still_refused() -> None:
    assert "unknown argument(s) colour" in refusal({"repo_path": "/r", "colour": None})


def test_a_closed_schema_refuses_an_unknown_keyword_by_its_own_rule() -> None:
    closed = {**SCHEMA, "additionalProperties": False}
    message = refusal({"repo_path": "/r", "colour": "red"}, closed)
    assert message.startswith("invalid arguments for git.get_file: (arguments): ")
    assert "'colour' was unexpected" in message
    assert message.endswith("(schema rule: additionalProperties)")


def test_a_schema_without_properties_takes_any_keyword() -> None:
    assert prepare_arguments(entry({"type": "object"}), {"anything": 1}) == {"anything": 1}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"repo_path": 5}, "repo-path: 5 is not of type 'string' (schema rule: type)"),
        ({"class_": 1}, "(arguments): 'repo-path' is a required property (schema rule: required)"),
        ({"repo_path": "/r", "class_": -1}, "class: -1 is less than the minimum of 0 (schema rule: minimum)"),
        (
            {"repo_path": "/r", "items": [{"n": 1}, {"n": "two"}]},
            "items[1].n: 'two' is not of type 'integer' (schema rule: type)",
        ),
    ],
)
def test_a_schema_violation_is_refused_naming_the_path_and_the_rule(
    arguments: dict[str, Any], expected: str
) -> None:
    assert refusal(arguments) == f"invalid arguments for git.get_file: {expected}"


def test_the_validator_follows_a_rebuilt_schema_for_the_same_tool() -> None:
    assert prepare_arguments(entry(), {"repo_path": "/r", "class_": 1}) == {"repo-path": "/r", "class": 1}
    stricter = {**SCHEMA, "properties": {**SCHEMA["properties"], "class": {"type": "integer", "minimum": 5}}}
    assert "minimum of 5" in refusal({"repo_path": "/r", "class_": 1}, stricter)


TAGS: dict[str, Any] = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
}


def test_a_200_000_item_array_of_mixed_types_is_refused_by_its_rule_not_compared_pair_by_pair() -> None:
    message = refusal({"tags": [0, "a", *([i] for i in range(200_000))]}, TAGS)
    assert message.startswith("invalid arguments for git.get_file: tags[")
    assert message.endswith("is not of type 'string' (schema rule: type)")


@pytest.mark.parametrize(
    "tags",
    [
        [[1], [True], [1]],
        [[1], [True], [1.0]],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        ["x", *map(str, range(9)), "x"],
    ],
)
def test_duplicates_by_json_equality_are_refused_by_unique_items(tags: list[Any]) -> None:
    assert refusal({"tags": tags}, TAGS).endswith("has non-unique elements (schema rule: uniqueItems)")


def test_distinct_items_that_python_thinks_equal_pass_unique_items() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    assert prepare_arguments(entry(schema), {"tags": [True, 1, [False], [0]]}) == {
        "tags": [True, 1, [False], [0]]
    }


def pattern_schema(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"name": {"type": "string", "pattern": pattern}}}


@pytest.mark.parametrize("name", ["a\rb", "a\nb", "a\u2028b", "a\u2029b", "ab\n"])
def test_a_childs_pattern_is_read_as_ecma_262(name: str) -> None:
    assert refusal({"name": name}, pattern_schema("^.+$")).endswith("(schema rule: pattern)")


def test_a_childs_unanchored_pattern_on_a_long_string_is_refused() -> None:
    message = refusal({"name": "a" * 1_000_000}, pattern_schema("[a-z]+:[0-9]+"))
    assert message.endswith("does not match '[a-z]+:[0-9]+' (schema rule: pattern)")


@pytest.mark.parametrize("pattern", ["^(a)\\1$", "^(?!admin)", "[", "a{1001}"])
def test_a_childs_pattern_the_gateway_cannot_run_is_left_to_the_child(pattern: str) -> None:
    assert prepare_arguments(entry(pattern_schema(pattern)), {"name": "admin"}) == {"name": "admin"}


FLAT_VALUES: list[Any] = ["text", "", True, False, 0, 7, -3, 1.0, 2.5, None, [], {}, [1], {"a": 1}]


@pytest.mark.parametrize(
    "draft", [None, "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#"]
)
@pytest.mark.parametrize("kind", ["string", "boolean", "integer", "number", "null"])
def test_a_flat_schema_accepts_and_refuses_each_value_exactly_as_the_schema_validator_does(
    draft: str | None, kind: str
) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"value": {"type": kind, "description": "the value"}, "note": {"type": "string"}},
        "required": ["value"],
        "additionalProperties": False,
    }
    if draft is not None:
        schema["$schema"] = draft
    validator = validator_for(schema)(schema)
    for value in FLAT_VALUES:
        for extra in ({}, {"note": "n"}, {"note": 1}, {"other": "x"}):
            wire = {"value": value, **extra}
            valid = validator.is_valid(wire)
            try:
                prepare_arguments(entry(schema), wire)
            except ToolCallError:
                assert not valid, (kind, draft, wire)
            else:
                assert valid, (kind, draft, wire)
    missing = {"note": "n"}
    assert not validator.is_valid(missing)
    with pytest.raises(ToolCallError, match="required"):
        prepare_arguments(entry(schema), missing)
