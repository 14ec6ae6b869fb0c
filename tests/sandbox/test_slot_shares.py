"""One caller's runs never hold every execution slot: past its share (all slots but one) they wait in
its own queue, and another caller's run takes the slot left; a run with no caller uses every slot."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import anyio
import pytest

from gateway import Sandbox, SandboxLimits

pytestmark = pytest.mark.anyio

WAIT = 60  # bounds a hang (a slot's engine is made at its first run), never a race


class Holds:
    """A tool that holds each call until the test releases them all, counting the calls inside."""

    def __init__(self) -> None:
        self.inside = 0
        self.arrived = anyio.Event()  # set, and replaced, as each call arrives
        self.release = anyio.Event()

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.inside += 1
        arrived, self.arrived = self.arrived, anyio.Event()
        arrived.set()
        await self.release.wait()
        return "released"

    async def until_inside(self, count: int) -> None:
        while self.inside < count:
            await self.arrived.wait()


async def _held_runs(sandbox: Sandbox, holds: Holds, holder: Hashable | None, runs: int) -> list[Any]:
    values: list[Any] = []

    async def one() -> None:
        values.append((await sandbox.execute("tools.test.hold()", tool_caller=holds, holder=holder)).value)

    async with anyio.create_task_group() as group:
        for _ in range(runs):
            group.start_soon(one)
    return values


async def test_another_callers_run_completes_while_one_caller_fills_every_slot_it_can() -> None:
    holds = Holds()
    values: list[Any] = []
    with Sandbox(SandboxLimits(max_concurrent_executions=3, prewarm_instances=0)) as sandbox:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:

                async def alice() -> None:
                    values.extend(await _held_runs(sandbox, holds, "alice", 3))

                group.start_soon(alice)
                await holds.until_inside(2)  # alice's share: 2 of the 3 slots
                # Her third waits in her own queue (the sandbox's counts have no event to wait for).
                while sandbox.slot_usage().queued < 1:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                bob = await sandbox.execute("'bob served'", holder="bob")
                assert bob.value == "bob served"
                assert holds.inside == 2
                holds.release.set()
            after = await sandbox.execute("'still serving'", holder="alice")
    assert values == ["released"] * 3
    assert after.value == "still serving"
    assert sandbox.slot_usage().queued == 0


async def test_a_run_without_a_caller_may_use_every_slot() -> None:
    holds = Holds()
    with Sandbox(SandboxLimits(max_concurrent_executions=2, prewarm_instances=0)) as sandbox:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:

                async def stdio() -> None:
                    assert await _held_runs(sandbox, holds, None, 2) == ["released"] * 2

                group.start_soon(stdio)
                await holds.until_inside(2)  # both slots, at once
                holds.release.set()


async def test_a_lone_caller_of_a_single_slot_gets_it() -> None:
    with Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)) as sandbox:
        with anyio.fail_after(WAIT):
            result = await sandbox.execute("'one slot'", holder="alice")
    assert result.value == "one slot"
