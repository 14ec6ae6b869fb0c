"""The watchdog: it interrupts executions past their wall-clock budget and sleeps while none runs."""

from __future__ import annotations

import threading
from typing import cast

import anyio
import pytest

from gateway import Sandbox, SandboxLimits
from gateway.sandbox._host_call import ExecutionState
from gateway.sandbox._slots import Slot, Watchdog
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio


class IdleSlot:
    """A slot running nothing, counting how often the watchdog looks at it."""

    def __init__(self) -> None:
        self.looks = 0
        self.lock = threading.Lock()

    def running(self) -> ExecutionState | None:
        with self.lock:
            self.looks += 1
        return None

    def overdue(self, now: float) -> ExecutionState | None:  # what a polling watchdog asks
        return self.running()

    def interrupt(self, execution: ExecutionState) -> None:
        raise AssertionError("nothing runs here to interrupt")


async def test_the_watchdog_never_wakes_while_no_execution_runs() -> None:
    slot = IdleSlot()
    watchdog = Watchdog([cast(Slot, slot)])
    try:
        await anyio.sleep(0.2)  # twenty polling periods of a watchdog that polled
    finally:
        watchdog.close()
    assert slot.looks == 0


async def test_an_execution_begun_while_a_longer_one_runs_is_stopped_at_its_own_deadline() -> None:
    limits = SandboxLimits(fuel=10**13, timeout_seconds=600, max_concurrent_executions=2, prewarm_instances=0)
    started = anyio.Event()
    tools = InProcessTools({"sync.started": started.set})
    with Sandbox(limits) as sandbox:
        short = None
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:

                async def spin() -> None:
                    await sandbox.execute("tools.sync.started()\nwhile True: pass", tool_caller=tools)

                tasks.start_soon(spin)
                await started.wait()  # the watchdog now sleeps until this one's deadline, 600 s away
                short = await sandbox.execute("while True: pass", timeout=0.5)
                tasks.cancel_scope.cancel()
        assert short is not None
        assert short.error is not None
        assert short.error.type == "WallTimeExceeded"
        assert "0.5 s (sandbox.timeout_seconds)" in short.error.message
        assert (await sandbox.execute("6 * 7")).value == 42
