"""Tool calls a snippet runs side by side: started on the event loop, waited for from the guest.

The guest's event loop hands the host each call it awaits (`@start`), then blocks in one host call
(`@wait`) until at least one of the calls it waits for has finished or its next timer is due; a task
it cancels cancels the call (`@cancel`). Everything here runs on the event loop, in the task group
that `Sandbox.execute` holds open for the run: when the run ends, calls still in flight are cancelled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from gateway.sandbox.result import ToolCallRecord

__all__ = ["CallInFlight", "CallsInFlight"]


@dataclass
class CallInFlight:
    """One started call: its record, and once done, its value or the exception it raised."""

    id: int
    name: str
    record: ToolCallRecord
    timeout: float  # this call's own bound: the per-call timeout, or what was left of the run's budget
    started: float = field(default_factory=time.monotonic)
    done: bool = False
    value: Any = None
    error: BaseException | None = None
    scope: anyio.CancelScope | None = None


class CallsInFlight:
    """The calls of one run that have started and not yet been handed back to the guest."""

    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        self._calls: dict[int, CallInFlight] = {}
        self._finished = anyio.Event()  # set, and replaced, each time a call finishes

    def __contains__(self, call_id: int) -> bool:
        return call_id in self._calls

    @property
    def running(self) -> list[CallInFlight]:
        return [call for call in self._calls.values() if not call.done]

    def start(self, call: CallInFlight, perform: Callable[[], Awaitable[Any]]) -> None:
        """Run `perform` for `call` in the run's task group. Call on the event loop."""
        # Made before the task begins, so that a call cancelled before then never reaches its child.
        call.scope = anyio.CancelScope()
        self._calls[call.id] = call
        self._task_group.start_soon(self._run, call, perform, name=f"tool call {call.name}")

    async def _run(self, call: CallInFlight, perform: Callable[[], Awaitable[Any]]) -> None:
        assert call.scope is not None
        try:
            # Admission (an approval, say) took part of the call's time: the call gets what is left.
            left = max(call.timeout - (time.monotonic() - call.started), 0.0)
            with call.scope, anyio.fail_after(left):
                call.value = await perform()
            if call.scope.cancel_called:
                call.record.error = "cancelled"
        except Exception as exc:  # the call's outcome, handed to the guest by `wait`
            call.error = exc
        except anyio.get_cancelled_exc_class():  # the run ended (or was cancelled) with it in flight
            call.record.error = "cancelled"
            raise
        finally:
            call.record.ms = round((time.monotonic() - call.started) * 1000, 3)
            call.done = True
            finished, self._finished = self._finished, anyio.Event()
            finished.set()

    async def wait(self, ids: Iterable[int], timeout: float | None) -> list[CallInFlight]:
        """The calls among `ids` that have finished, waiting up to `timeout` for the first of them;
        they are handed over (forgotten here). Empty when the time ran out first."""
        wanted = [self._calls[call_id] for call_id in ids if call_id in self._calls]
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            # With no call wanted (the guest's loop waits for a timer alone), this sleeps until the
            # timeout: answering at once made the guest ask again and again until the timer was due,
            # burning its fuel (`@wait` answered ~3,000 times a second for one asyncio.sleep).
            while not any(call.done for call in wanted):
                await self._finished.wait()
        done = [call for call in wanted if call.done]
        for call in done:
            del self._calls[call.id]
        return done

    async def wait_all(self) -> list[CallInFlight]:
        """Every call not yet handed over, once each has finished (each is bounded by its timeout)."""
        while self.running:
            await self._finished.wait()
        done = list(self._calls.values())
        self._calls.clear()
        return done

    def cancel(self, ids: Iterable[int]) -> None:
        """Cancel calls the guest no longer waits for; they are forgotten."""
        for call_id in ids:
            call = self._calls.pop(call_id, None)
            if call is not None and call.scope is not None:
                call.scope.cancel()
