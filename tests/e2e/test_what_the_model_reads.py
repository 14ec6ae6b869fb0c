"""What the model reads of an execute_code result, rendered as Claude Code and the text-content clients
render it, through the real gateway process and the SDK client: every byte earns its place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from mcp import Client, types

from tests.e2e.client_views import claude_code_view, text_view
from tests.e2e.gateway_process import WAIT, python_child, sdk_client, write_config
from tests.real_servers import TRACE_SERVER

pytestmark = pytest.mark.anyio

ENVELOPE_BYTES = 24
"""At most this much besides what the snippet printed or returned (the issue's target)."""

View = Callable[[types.CallToolResult], str]
MODEL_VIEWS = pytest.mark.parametrize("view", [claude_code_view, text_view], ids=["claude-code", "text"])


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """One gateway serves the module: each test reads only the result of its own executions. Its one
    child, the trace server, has a tool that answers (trace_context) and one that fails."""
    trace = python_child(TRACE_SERVER)
    config = write_config(
        tmp_path_factory.mktemp("config"), {"mcpServers": {"trace": trace}}, default_search=True
    )
    async with sdk_client(config) as connected:
        yield connected


async def run(client: Client, code: str, **arguments: Any) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool("execute_code", {"code": code, **arguments})


def besides(shown: str, own: str) -> int:
    """The bytes of `shown` that are not `own` (which it must contain)."""
    assert own in shown, shown
    return len(shown.encode()) - len(own.encode())


@MODEL_VIEWS
async def test_print_1_costs_at_most_24_bytes_besides_the_1(client: Client, view: View) -> None:
    shown = view(await run(client, "print(1)"))
    assert besides(shown, "1") <= ENVELOPE_BYTES, shown


@MODEL_VIEWS
async def test_a_value_costs_at_most_24_bytes_besides_itself(client: Client, view: View) -> None:
    shown = view(await run(client, '{"a": 1}'))
    assert besides(shown, "{'a': 1}") <= ENVELOPE_BYTES, shown


@MODEL_VIEWS
async def test_a_hundred_successful_inner_calls_add_no_byte(client: Client, view: View) -> None:
    alone = view(await run(client, "print('ok')"))
    busy = view(await run(client, "for i in range(100):\n    tools.trace.trace_context()\nprint('ok')"))
    assert busy == alone == "ok"


@MODEL_VIEWS
async def test_a_caught_failed_call_is_one_short_line(client: Client, view: View) -> None:
    code = "try:\n    tools.trace.fail()\nexcept ToolError:\n    pass\nprint('ok')"
    shown = view(await run(client, code))
    assert shown == "ok\n[trace.fail failed: this tool always fails]"


@MODEL_VIEWS
async def test_an_uncaught_error_names_the_tool_the_childs_message_and_the_snippets_line(
    client: Client, view: View
) -> None:
    result = await run(client, "x = 1\ny = 2\nfail = tools.trace.fail\nfail()")
    shown = view(result)
    assert result.is_error
    assert 'File "<snippet>", line 4' in shown
    assert "ToolError: this tool always fails" in shown
    # The call's own line names the tool that the source line and the child's message leave unnamed.
    assert shown.endswith("ToolError: this tool always fails\n[trace.fail failed]")
    assert "^^" not in shown  # Python's position markers repeat the line above them


@MODEL_VIEWS
async def test_a_limit_is_one_line_naming_it(client: Client, view: View) -> None:
    result = await run(client, "while True:\n    pass", timeout=0.5)
    shown = view(result)
    assert result.is_error
    assert len(shown.splitlines()) == 1, shown
    assert "timeout" in shown


@MODEL_VIEWS
async def test_details_bring_every_call_its_time_and_the_fuel_alike_in_both_views(
    client: Client, view: View
) -> None:
    result = await run(client, "tools.trace.trace_context()\nprint('ok')", details=True)
    shown = view(result)
    assert shown == text_view(result)  # the same record whichever way a client reads it
    for field in (
        '"tool_calls":[{"tool":"trace.trace_context","ms":',
        '"fuel":',
        '"ms":',
        '"stdout":"ok\\n"',
    ):
        assert field in shown
