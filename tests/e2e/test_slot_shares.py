"""One caller cannot lock the others out of the sandbox's slots or a child's call slots, through the real
gateway process over HTTP with two principals' tokens (static tokens for alice and bob) and a real
stdio child (tests/servers/latch_server.py), whose `wait_for(path)` holds a call until the test
creates the file.

Two execution slots and two call slots for the child: each caller's share is one of each. Alice
fills every slot she can with calls the test holds; bob's run (and his call of that child) then
completes while hers are still held; once hers are released, everything still serves."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, types

from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import WAIT, environment, text, write_config
from tests.e2e.test_background import ALICE, BOB, client_of
from tests.real_servers import SERVERS

pytestmark = pytest.mark.anyio

LATCH_SERVER = SERVERS / "latch_server.py"
RUN_WAITS = "a run waits for its caller's share of the execution slots (all but one of them)"
CALL_WAITS = "a call waits for its caller's share of a child's call slots (all but one of them)"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def latch_gateway(directory: Path) -> AsyncIterator[tuple[HttpGateway, Client, Client]]:
    """The gateway over the latch child, two execution slots and two call slots for it, and a client
    each for alice and bob, by their static tokens."""
    latch = {
        "command": sys.executable,
        "args": [str(LATCH_SERVER)],
        "startup_timeout_seconds": WAIT,
        "max_concurrent_calls": 2,
    }
    config = {
        "mcpServers": {"latch": latch},
        "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
        "sandbox": {"max_concurrent_executions": 2, "tool_call_timeout_seconds": WAIT},
    }
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    async with (
        http_gateway(write_config(directory, config), env=env) as gateway,
        client_of(gateway, token=ALICE, read_timeout=WAIT) as alice,
        client_of(gateway, token=BOB, read_timeout=WAIT) as bob,
    ):
        yield gateway, alice, bob


async def until_exists(path: Path) -> None:
    while not await anyio.Path(path).exists():  # noqa: ASYNC110 (the child makes it)
        await anyio.sleep(0.02)


async def until_either_exists(*paths: Path) -> None:
    while not [path for path in paths if await anyio.Path(path).exists()]:  # noqa: ASYNC110 (as above)
        await anyio.sleep(0.02)


def held_run(path: Path) -> dict[str, str]:
    return {"code": f"tools.latch.wait_for(path={str(path)!r})"}


async def run(client: Client, arguments: dict[str, str], into: list[types.CallToolResult]) -> None:
    into.append(await client.call_tool("execute_code", arguments))


async def served_after(*clients: Client) -> list[str]:
    """What each client's run reads once the held ones have ended: the gateway still serves them all."""
    code = {"code": "tools.latch.echo(text='still serving')"}
    return [text(await client.call_tool("execute_code", code)) for client in clients]


async def test_another_callers_run_completes_while_one_caller_holds_every_execution_slot_it_can(
    tmp_path: Path,
) -> None:
    held = [tmp_path / "alice-first", tmp_path / "alice-second"]
    alices: list[types.CallToolResult] = []
    async with latch_gateway(tmp_path) as (gateway, alice, bob):
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(run, alice, held_run(held[0]), alices)
                await until_exists(Path(f"{held[0]}.waiting"))  # her first run holds her one slot
                group.start_soon(run, alice, held_run(held[1]), alices)
                await gateway.logged(RUN_WAITS)  # her second waits in her own queue
                bobs = await bob.call_tool("execute_code", {"code": "tools.latch.echo(text='bob served')"})
                assert text(bobs) == "{'result': 'bob served'}", text(bobs)
                assert not await anyio.Path(f"{held[1]}.waiting").exists()  # still in her queue
                for path in held:
                    path.touch()
            after = await served_after(alice, bob)
    assert [text(result) for result in alices] == ["{'result': 'released'}"] * 2
    assert after == ["{'result': 'still serving'}"] * 2


GATHERED = (
    "import asyncio\n"
    "await asyncio.gather(tools.latch.wait_for(path={first!r}), tools.latch.wait_for(path={second!r}))"
)


async def test_another_callers_call_of_a_child_completes_while_one_caller_holds_every_call_slot_it_can(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "alice-first", tmp_path / "alice-second"
    alices: list[types.CallToolResult] = []
    async with latch_gateway(tmp_path) as (gateway, alice, bob):
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                gathered = {"code": GATHERED.format(first=str(first), second=str(second))}
                group.start_soon(run, alice, gathered, alices)
                await gateway.logged(CALL_WAITS)  # one of her two calls waits in her own queue
                await until_either_exists(Path(f"{first}.waiting"), Path(f"{second}.waiting"))
                bobs = await bob.call_tool("execute_code", {"code": "tools.latch.echo(text='bob served')"})
                assert text(bobs) == "{'result': 'bob served'}", text(bobs)
                waiting = [await anyio.Path(f"{path}.waiting").exists() for path in (first, second)]
                assert sorted(waiting) == [False, True]  # the other is still in her queue
                for path in (first, second):
                    path.touch()
            after = await served_after(alice, bob)
    [gathered_result] = alices
    assert text(gathered_result) == "[{'result': 'released'}, {'result': 'released'}]", text(gathered_result)
    assert after == ["{'result': 'still serving'}"] * 2
