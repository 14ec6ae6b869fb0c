"""Tool arguments checked against the child's inputSchema, under the child's own names, before sending."""

from __future__ import annotations

from typing import Any

import pytest
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
