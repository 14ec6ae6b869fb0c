"""The MCP server's tool definitions, in process (the end-to-end tests drive the real process)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gateway import ErrorInfo, ExecutionResult, ToolCallRecord
from gateway.server._server import OUTPUT_SCHEMA, _tools


def test_the_output_schema_names_every_field_of_an_execution_result() -> None:
    assert set(OUTPUT_SCHEMA["properties"]) == set(ExecutionResult.model_fields)


@pytest.mark.parametrize(
    "result",
    [
        ExecutionResult(ok=True, stdout="x\n", value={"a": [1]}, value_repr="{'a': [1]}", fuel=5, ms=1.5),
        ExecutionResult(
            ok=False,
            error=ErrorInfo(
                type="ZeroDivisionError", category="snippet", message="division by zero", traceback="tb"
            ),
            tool_calls=[ToolCallRecord(tool="t.x", ms=0.5, ok=False, error="ToolError")],
        ),
    ],
)
def test_every_execution_result_validates_against_the_declared_output_schema(result: ExecutionResult) -> None:
    jsonschema.validate(result.model_dump(mode="json"), OUTPUT_SCHEMA)


def test_a_result_missing_a_field_does_not_validate() -> None:
    dumped = ExecutionResult(ok=True).model_dump(mode="json")
    del dumped["tool_calls"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dumped, OUTPUT_SCHEMA)


@pytest.mark.parametrize(("read_only", "destructive"), [(True, False), (False, True)])
def test_execute_code_carries_the_annotations_it_is_given(read_only: bool, destructive: bool) -> None:
    search, execute = _tools(read_only, destructive)
    assert search.annotations is not None
    assert search.annotations.read_only_hint is True
    assert execute.annotations is not None
    assert execute.annotations.read_only_hint is read_only
    assert execute.annotations.destructive_hint is destructive


def test_the_two_tools_stay_under_4_kb_of_json() -> None:
    tools = _tools(False, True)
    assert (
        len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])) < 4096
    )
