"""The middleware step in the gateway core, over a real child: exposed tools, and each run's own chain."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from mcp import types

from gateway.calls._gateway import Gateway
from gateway.config import parse_config
from gateway.errors import ToolCallError
from gateway.middleware import Call, CallNext, Chain, Layer, Refused
from gateway.policy import no_approver
from tests.e2e.gateway_process import python_child
from tests.real_servers import TINY_SERVER

pytestmark = pytest.mark.anyio

WAIT = 60


async def passes(call: Call, call_next: CallNext) -> Any:
    return await call_next(call)


async def shouts(call: Call, call_next: CallNext) -> Any:
    value = await call_next(call)
    return {"result": value["result"].upper()}


async def refuses(call: Call, call_next: CallNext) -> Any:
    raise Refused(f"{call.tool} is closed today")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway serves the module's tests."""
    return "asyncio"


@pytest.fixture(scope="module")
async def shared_gateway() -> AsyncIterator[Gateway]:
    """One gateway over tiny for the module: each test sets the chain it needs (search is not used)."""
    tiny = python_child(TINY_SERVER)
    data = {"mcpServers": {"tiny": tiny}, "expose": ["tiny.echo"], "search": {"semantic": "off"}}
    async with Gateway(parse_config(data, "test")) as gateway:
        with anyio.fail_after(WAIT):
            await gateway.settled_exposure()
        yield gateway


@pytest.fixture
def gateway(shared_gateway: Gateway) -> Iterator[Gateway]:
    """The shared gateway, given back with the chain it had before the test."""
    original = shared_gateway.middleware
    yield shared_gateway
    shared_gateway.middleware = original


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def call_echo(gateway: Gateway, text: str) -> types.CallToolResult:
    exposed = await gateway.exposed_tool("tiny__echo")
    assert exposed is not None
    with anyio.fail_after(WAIT):
        return await gateway.call_exposed(exposed, {"text": text})


async def test_an_exposed_tool_passed_on_unchanged_answers_with_the_childs_own_result(
    gateway: Gateway,
) -> None:
    direct = await call_echo(gateway, "hi")
    gateway.middleware = Chain((Layer("test:passes", passes),))
    through = await call_echo(gateway, "hi")
    assert through == direct


async def test_an_exposed_tool_answers_with_what_a_middleware_returned_instead(gateway: Gateway) -> None:
    gateway.middleware = Chain((Layer("test:shouts", shouts),))
    result = await call_echo(gateway, "hi")
    assert result.structured_content == {"result": "HI"}
    assert texts(result) == ['{"result": "HI"}']
    assert not result.is_error


async def test_a_middleware_refuses_an_exposed_tool_as_it_would_a_snippets_call(gateway: Gateway) -> None:
    gateway.middleware = Chain((Layer("test:refuses", refuses),))
    with pytest.raises(ToolCallError, match=r"tiny\.echo is closed today"):
        await call_echo(gateway, "hi")


async def test_an_execution_keeps_the_chain_it_started_with_when_the_gateway_gets_another(
    gateway: Gateway,
) -> None:
    before = Chain((Layer("test:passes", passes),))
    gateway.middleware = before
    execution = gateway._start(None, None).execution("exec-1", no_approver)  # pyright: ignore[reportPrivateUsage]
    gateway.middleware = Chain((Layer("test:refuses", refuses),))  # as a config reload would
    assert execution.middleware is before
    later = gateway._start(None, None).execution("exec-2", no_approver)  # pyright: ignore[reportPrivateUsage]
    assert later.middleware is gateway.middleware


async def adds_an_argument(call: Call, call_next: CallNext) -> Any:
    return await call_next(call.replace(arguments={**call.arguments, "shell": "rm -rf /"}))


async def test_arguments_a_middleware_changed_are_checked_against_the_childs_schema(gateway: Gateway) -> None:
    gateway.middleware = Chain((Layer("test:adds", adds_an_argument),))
    with pytest.raises(ToolCallError) as refused:
        await call_echo(gateway, "hi")
    assert "unknown argument(s) shell" in str(refused.value)
    assert "(in the arguments as middleware test:adds changed them)" in str(refused.value)
