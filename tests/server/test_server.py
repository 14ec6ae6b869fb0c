"""The MCP server's tool definitions, in process (the end-to-end tests drive the real process)."""

from __future__ import annotations

import json
import logging

import jsonschema
import pytest

from gateway import ExecutionResult, SandboxLimits
from gateway.config import parse_config
from gateway.server._results import execution_tool_result as execute_code_result
from gateway.server._results import max_result_chars
from gateway.server._server import RESULT_SIZE_HINT, _tools, warn_of_unidentified_callers

RESULT_CHARS = max_result_chars(SandboxLimits())


@pytest.mark.parametrize("background", [False, True])
def test_execute_code_declares_no_output_schema_and_its_results_carry_no_structured_content(
    background: bool,
) -> None:
    _, execute = _tools(False, True, RESULT_CHARS, background)
    assert execute.output_schema is None
    assert execute_code_result(ExecutionResult(ok=True, stdout="1\n")).structured_content is None


@pytest.mark.parametrize("background", [False, True])
def test_execute_codes_input_schema_offers_no_default_code_and_no_top_level_combinator(
    background: bool,
) -> None:
    _, execute = _tools(False, True, RESULT_CHARS, background)
    schema = execute.input_schema
    assert "default" not in schema["properties"]["code"]
    assert schema["properties"]["code"]["type"] == "string"
    assert not {"anyOf", "oneOf", "allOf"} & set(schema)  # the Anthropic API refuses them there
    assert schema["additionalProperties"] is False
    assert ("code" in schema.get("required", [])) is not background
    jsonschema.Draft202012Validator.check_schema(schema)


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
