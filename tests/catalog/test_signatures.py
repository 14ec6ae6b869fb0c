"""Python stubs rendered from JSON Schema: valid Python, short, and callable as written."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from mcp.types import Tool

from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._signatures import (
    MAX_SIGNATURE_CHARS,
    Style,
    compact_json,
    first_sentence,
    full_doc,
    render_type,
    signature,
)
from tests.real_servers import snapshot_catalog

REAL = snapshot_catalog()


def _entry(
    input_schema: dict[str, Any],
    description: str = "Does a thing.",
    output_schema: dict[str, Any] | None = None,
    title: str | None = None,
) -> CatalogEntry:
    tool = Tool(
        name="tool",
        title=title,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
    )
    entry = Catalog({"srv": [tool]}).get("srv.tool")
    assert entry is not None
    return entry


def _as_def(line: str) -> str:
    """`server.tool(params) -> Ret  # comment` as `def tool(params) -> Ret: ...`."""
    code, _, _ = line.partition("  # ")
    return "def " + code.split(".", 1)[1] + ": ..."


def _real(name: str) -> CatalogEntry:
    entry = REAL.get(name)
    assert entry is not None
    return entry


@pytest.mark.parametrize("entry", REAL.entries, ids=lambda e: e.qualified)
def test_every_real_tool_renders_a_short_line_that_parses_as_python(entry: CatalogEntry) -> None:
    line = signature(entry)
    assert "\n" not in line
    assert len(line) <= MAX_SIGNATURE_CHARS
    assert line.startswith(entry.qualified + "(")
    ast.parse(_as_def(line))


@pytest.mark.parametrize("entry", REAL.entries, ids=lambda e: e.qualified)
def test_every_real_tools_full_doc_parses_and_carries_its_input_schema(entry: CatalogEntry) -> None:
    first, *rest = full_doc(entry).split("\n")
    ast.parse(_as_def(first))
    schema = next(line for line in rest if line.startswith("  input: "))
    assert json.loads(schema.removeprefix("  input: "))["type"] == "object"


def test_signatures_of_the_real_tools_average_well_under_the_budget() -> None:
    sizes = [len(signature(entry)) for entry in REAL.entries]
    assert sum(sizes) / len(sizes) < 200  # ~50 tokens; measured ~152 chars with the 2026 servers


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (  # the returned object is a dict to the snippet: its keys, not its title
            "time.get_current_time",
            "time.get_current_time(*, timezone: str) -> "
            "{'timezone': str, 'datetime': str, 'day_of_week': str, 'is_dst': bool}",
        ),
        (
            "git.git_diff_staged",
            "git.git_diff_staged(*, repo_path: str, context_lines: int = 3) -> Any",
        ),
        ("everything.get_sum", "everything.get_sum(*, a: float, b: float) -> Any"),
        ("git.git_commit", "git.git_commit(*, repo_path: str, message: str) -> Any"),
        (
            "memory.create_entities",
            "memory.create_entities(*, entities: list[{'name': str, 'entityType': str,"
            " 'observations': list[str]}]) -> dict",
        ),
        (
            "git.git_log",
            "git.git_log(*, repo_path: str, max_count: int = 10, start_timestamp: str | None = None,"
            " end_timestamp: str | None = None) -> Any",
        ),
    ],
)
def test_real_signatures_read_like_python_stubs(name: str, expected: str) -> None:
    code, _, _ = signature(_real(name)).partition("  # ")
    assert code == expected


def test_the_comment_is_the_descriptions_first_sentence() -> None:
    assert signature(_real("time.get_current_time")).endswith("  # Get current time in a specific timezone")


def test_a_deprecated_tool_says_so() -> None:
    assert "# (deprecated) Read the complete contents" in signature(_real("filesystem.read_file"))
    assert "deprecated" in full_doc(_real("filesystem.read_file")).split("\n")[1]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({}, "Any"),
        (True, "Any"),
        ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
        ({"type": "array"}, "list"),
        ({"type": "object"}, "dict"),
        ({"type": "object", "title": "Time Result", "properties": {"a": {}}}, "TimeResult"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"type": "string", "enum": ["a", None]}, "Literal['a'] | None"),
        ({"const": 3}, "Literal[3]"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "str | None"),
        ({"oneOf": [{"type": "null"}, {"type": "integer"}, {"type": "string"}]}, "int | str | None"),
        ({"type": ["null", "string"]}, "str | None"),
        ({"$ref": "#/$defs/Entity"}, "Entity"),
        ({"$ref": "#/definitions/entity-kind"}, "EntityKind"),
        ({"$ref": "https://example.com/schema.json"}, "Any"),
        ({"allOf": [{"$ref": "#/$defs/Point"}]}, "Point"),
        ({"enum": [1.5, 2.5]}, "float"),
    ],
)
def test_json_schema_types_map_to_python_types(schema: object, expected: str) -> None:
    assert render_type(schema) == expected


def test_untitled_objects_show_their_keys_with_optional_ones_marked() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}},
        "required": ["id"],
    }
    assert render_type(schema) == "{'id': int, 'tags': NotRequired[list]}"
    assert render_type(schema, Style(shapes=False)) == "dict"


def test_long_enums_fall_back_to_their_base_type() -> None:
    schema = {"type": "string", "enum": [f"value-number-{i}" for i in range(10)]}
    assert render_type(schema) == "str"


def test_required_parameters_come_first_and_optional_ones_show_their_defaults() -> None:
    entry = _entry(
        {
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 10},
                "query": {"type": "string"},
                "mode": {"enum": ["fast", "slow"]},
                "url": {"type": "string", "default": "https://example.com/a/very/long/default/value"},
                "flags": {"type": "array", "items": {"type": "string"}, "default": []},
            },
            "required": ["query"],
        }
    )
    code, _, _ = signature(entry).partition("  # ")
    assert code == (
        "srv.tool(*, query: str, limit: int = 10, mode: Literal['fast', 'slow'] = None, url: str = ...,"
        " flags: list[str] = []) -> Any"
    )


def test_a_tool_without_parameters_renders_empty_parentheses() -> None:
    assert signature(_entry({"type": "object"})).startswith("srv.tool() -> Any  # ")


def test_parameter_names_that_are_keywords_render_under_their_python_names() -> None:
    entry = _entry({"type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]})
    assert signature(entry).startswith("srv.tool(*, from_: str) -> Any")
    ast.parse(_as_def(signature(entry)))


def test_the_return_type_is_the_output_schemas_shape_whatever_its_title_and_nested_titles_name_types() -> (
    None
):
    ok = {"ok": {"type": "boolean"}}
    titled = _entry({"type": "object"}, output_schema={"type": "object", "title": "Report", "properties": ok})
    untitled = _entry({"type": "object"}, output_schema={"type": "object", "properties": ok})
    empty = _entry({"type": "object"}, output_schema={"type": "object", "title": "Report", "properties": {}})
    inner = {"type": "object", "title": "Time Result", "properties": ok}
    nested = _entry({"type": "object"}, output_schema={"type": "object", "properties": {"at": inner}})
    assert signature(titled).startswith("srv.tool() -> {'ok': NotRequired[bool]}")
    assert signature(untitled).startswith("srv.tool() -> {'ok': NotRequired[bool]}")
    assert signature(empty).startswith("srv.tool() -> dict")
    assert signature(nested).startswith("srv.tool() -> {'at': NotRequired[TimeResult]}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Do X. Then Y.", "Do X."),
        ("Use a zone, e.g. Europe/Paris, here. More.", "Use a zone, e.g. Europe/Paris, here."),
        ("Line one\n\nParagraph two", "Line one"),
        ("  spread\n  over lines  ", "spread over lines"),
        ("", ""),
    ],
)
def test_first_sentence_stops_at_the_first_real_sentence_end(text: str, expected: str) -> None:
    assert first_sentence(text) == expected


def test_a_long_description_is_clipped_to_fit_the_budget() -> None:
    line = signature(_entry({"type": "object"}, description="word " * 200))
    assert len(line) <= MAX_SIGNATURE_CHARS
    assert line.endswith("...")


def test_a_signature_over_budget_drops_detail_before_it_drops_the_description() -> None:
    properties = {f"option_{i}": {"enum": ["alpha", "beta", "gamma"]} for i in range(4)}
    line = signature(_entry({"type": "object", "properties": properties}, description="Tunes the engine."))
    assert len(line) <= MAX_SIGNATURE_CHARS
    assert "option_0: str = None" in line
    assert line.endswith("# Tunes the engine.")


def test_full_doc_has_the_whole_description_and_both_schemas_without_noise() -> None:
    entry = _entry(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "title": "toolArguments",
            "properties": {"title": {"type": "string", "title": "Title"}},
        },
        description="First line.\nSecond line.",
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    assert full_doc(entry).split("\n") == [
        "srv.tool(*, title: str = None) -> {'n': NotRequired[int]}",
        "  First line.",
        "  Second line.",
        '  input: {"type":"object","properties":{"title":{"type":"string"}}}',
        '  output: {"type":"object","properties":{"n":{"type":"integer"}}}',
    ]


def test_compact_json_never_changes_the_catalogs_schema() -> None:
    schema = {"$schema": "x", "type": "object", "title": "T"}
    compact_json(schema)
    assert schema == {"$schema": "x", "type": "object", "title": "T"}


def test_a_tool_with_very_many_options_keeps_its_required_parameters_and_hides_the_rest() -> None:
    properties = {f"setting_number_{i}": {"type": "string"} for i in range(40)}
    properties["target"] = {"type": "string"}
    entry = _entry({"type": "object", "properties": properties, "required": ["target"]})
    line = signature(entry)
    assert line.startswith("srv.tool(*, target: str, **options: Any) -> Any  # Does a thing.")
    ast.parse(_as_def(line))
    assert "setting_number_39: str = None" in full_doc(entry)


def test_a_tool_with_only_many_options_renders_them_as_keyword_options() -> None:
    properties = {f"setting_number_{i}": {"type": "string"} for i in range(40)}
    line = signature(_entry({"type": "object", "properties": properties}))
    assert line.startswith("srv.tool(**options: Any) -> Any")


def test_a_tool_without_output_schema_returns_any_and_keeps_its_descriptions_first_sentence() -> None:
    assert signature(_real("everything.get_sum")) == (
        "everything.get_sum(*, a: float, b: float) -> Any  # Returns the sum of two numbers"
    )
    assert signature(_real("git.git_log")).endswith("-> Any  # Shows the commit logs")


def test_an_observed_shape_is_the_return_type_of_a_tool_without_output_schema_marked_as_observed() -> None:
    observed = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    line = signature(_entry({"type": "object"}), observed=observed)
    assert line == "srv.tool() -> {'n': int}  # (observed) Does a thing."
    assert full_doc(_entry({"type": "object"}), observed).split("\n")[:2] == [
        "srv.tool() -> {'n': int}",
        "  observed return type (not declared)",
    ]


def test_a_declared_output_schema_wins_over_an_observed_shape() -> None:
    entry = _entry({"type": "object"}, output_schema={"type": "object", "title": "Report", "properties": {}})
    line = signature(entry, observed={"type": "string"})
    assert line == "srv.tool() -> dict  # Does a thing."


def test_a_long_observed_shape_loses_its_keys_before_the_description() -> None:
    keys = {f"field_number_{i}": {"type": "string"} for i in range(8)}
    observed = {"type": "object", "properties": keys, "required": list(keys)}
    line = signature(_entry({"type": "object"}, description="Reads the thing."), observed=observed)
    assert line == "srv.tool() -> dict  # (observed) Reads the thing."
    assert "field_number_7" in full_doc(_entry({"type": "object"}), observed)
