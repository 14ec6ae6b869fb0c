"""The MCP server's tool definitions, in process (the end-to-end tests drive the real process)."""

from __future__ import annotations

import json
import logging

import jsonschema
import pytest

from gateway import ErrorInfo, ExecutionResult, SandboxLimits, ToolCallRecord
from gateway.config import parse_config
from gateway.server._results import execution_tool_result, max_result_chars
from gateway.server._server import OUTPUT_SCHEMA, RESULT_SIZE_HINT, _tools, warn_of_unidentified_callers

RESULT_CHARS = max_result_chars(SandboxLimits())


def test_the_output_schema_names_every_field_of_the_structured_content() -> None:
    structured = execution_tool_result(ExecutionResult(ok=True)).structured_content
    assert structured is not None
    assert set(OUTPUT_SCHEMA["properties"]) == set(structured)


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
    jsonschema.validate(execution_tool_result(result).structured_content, OUTPUT_SCHEMA)


def test_a_result_missing_a_field_does_not_validate() -> None:
    dumped = ExecutionResult(ok=True).model_dump(mode="json")
    del dumped["tool_calls"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dumped, OUTPUT_SCHEMA)


@pytest.mark.parametrize(("read_only", "destructive"), [(True, False), (False, True)])
def test_execute_code_carries_the_annotations_it_is_given(read_only: bool, destructive: bool) -> None:
    search, execute = _tools(read_only, destructive, RESULT_CHARS)
    assert search.annotations is not None
    assert search.annotations.read_only_hint is True
    assert execute.annotations is not None
    assert execute.annotations.read_only_hint is read_only
    assert execute.annotations.destructive_hint is destructive


def test_the_two_tools_stay_under_4_kb_of_json() -> None:
    tools = _tools(False, True, RESULT_CHARS)
    assert (
        len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])) < 4096
    )


def test_each_description_stays_under_the_2_kb_claude_code_keeps() -> None:
    for tool in _tools(False, True, RESULT_CHARS):
        assert tool.description is not None
        assert len(tool.description.encode()) < 2048


def test_execute_code_tells_claude_code_how_large_its_results_may_be() -> None:
    _, execute = _tools(False, True, RESULT_CHARS)
    wire = execute.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["_meta"] == {RESULT_SIZE_HINT: RESULT_CHARS}
    # The defaults keep a result under Claude Code's 50,000-character limit for results it shows inline.
    assert 30_000 < RESULT_CHARS < 50_000


def test_roles_without_auth_are_said_at_start_to_name_nobody(server_log: list[logging.LogRecord]) -> None:
    roles = {"policy": {"roles": {"contractor": {"principals": ["bob"], "deny": ["*"]}}}}
    warn_of_unidentified_callers(parse_config({"mcpServers": {}}, "t"), "stdio")
    assert server_log == []
    warn_of_unidentified_callers(parse_config({"mcpServers": {}, **roles}, "t"), "stdio")
    (record,) = server_log
    assert record.levelno == logging.WARNING
    assert "policy as written" in record.getMessage()
    assert record.__dict__["roles"] == ["contractor"]
