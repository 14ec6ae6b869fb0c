"""The sandbox runner: a fresh wasm instance per execution, under fuel, epoch, memory and output limits."""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import secrets
from collections.abc import Hashable
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

import anyio
import anyio.to_thread
import wasmtime
from wasmtime.component import Func

from gateway.errors import (
    CodeTooLarge,
    ExecutionFailed,
    GatewayBusy,
    GuestCrashed,
    SnippetError,
)
from gateway.sandbox._hop import WorkerThreads, asyncio_loop
from gateway.sandbox._host_call import ExecutionState, bound_to_thread
from gateway.sandbox._journal import HostJournal
from gateway.sandbox._outcome import failed_result, outcome_result
from gateway.sandbox._parallel import CallsInFlight
from gateway.sandbox._services import HostServices, ToolCaller, ToolsOnly, cancelled_error
from gateway.sandbox._slots import HOST_INTERFACE, Slot, Watchdog, load_slots
from gateway.sandbox._traps import translate_trap
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from gateway.shared import Shares

__all__ = ["HOST_INTERFACE", "Sandbox"]

log = logging.getLogger("gateway.sandbox")

REPLENISH_DELAY_SECONDS = 0.003
"""How long after an execution's result the slot's prewarm thread starts freeing the used instance
and making the next: its Python stretches take the GIL, and the response still has to be serialized
and written by the event loop."""


class SlotUsage(NamedTuple):
    """The execution slots at one moment (the metrics read it)."""

    slots: int
    busy: int
    queued: int


def _run_options(limits: SandboxLimits, journal: HostJournal | None) -> str:
    return json.dumps(
        {
            # A resumed run gets the seed of the run it repeats: the same randomness, the same hashes.
            "seed": journal.seed if journal is not None else secrets.token_hex(32),
            "max_stdout_bytes": limits.max_stdout_bytes,
            "max_stderr_bytes": limits.max_stderr_bytes,
            "max_value_bytes": limits.max_value_bytes,
        }
    )


def _used(store: wasmtime.Store, limits: SandboxLimits) -> int:
    return limits.fuel - store.get_fuel()


class Sandbox:
    """Execution slots (an engine, its compiled component and prewarmed instances each); a fresh
    store and instance per execution; at most one execution per slot at a time."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        component_path: Path | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.limits = limits or SandboxLimits()
        slots, loaded = load_slots(self.limits, component_path=component_path, cache_dir=cache_dir)
        self.component_sha256 = loaded.sha256
        self.compiled_on_load = loaded.compiled
        self._slots = slots
        # Last in, first out: one caller at a time keeps reusing the slot it just used, so the code
        # and memory of the others are only touched when executions really overlap.
        self._free: queue.LifoQueue[Slot] = queue.LifoQueue()
        for slot in reversed(slots):
            self._free.put(slot)
        self._limiter = anyio.CapacityLimiter(len(slots))
        # One caller's runs never hold every slot: past its share they wait in its own queue.
        self._shares = Shares(len(slots), on_wait=_run_waits_for_share)
        self._workers = WorkerThreads("sandbox-run")
        self._watchdog = Watchdog(slots)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop prewarming and the watchdog; executions in flight still end at their fuel limit."""
        self._watchdog.close()
        for slot in self._slots:
            slot.close()

    def slot_usage(self) -> SlotUsage:
        """The execution slots now: how many, how many run a snippet, how many runs wait for one
        (for a free slot, or for their caller's share)."""
        stats = self._limiter.statistics()
        return SlotUsage(len(self._slots), stats.borrowed_tokens, self._waiting())

    def _waiting(self) -> int:
        return self._limiter.statistics().tasks_waiting + self._shares.waiting()

    def timeout_for(self, requested: float | None, limits: SandboxLimits | None = None) -> float:
        """The wall budget for one execution: the request's, capped by the config's (or `limits`')."""
        configured = (limits or self.limits).timeout_seconds
        return configured if requested is None else max(0.001, min(float(requested), configured))

    def _busy(self) -> GatewayBusy | None:
        waiting = self._waiting()
        if self._limiter.available_tokens > 0 or waiting < self.limits.max_queued_executions:
            return None
        return GatewayBusy(
            f"the gateway is busy: {self._limiter.total_tokens:g} executions running and {waiting} queued "
            f"(sandbox.max_concurrent_executions, sandbox.max_queued_executions); retry shortly"
        )

    async def execute(
        self,
        code: str,
        *,
        services: HostServices | None = None,
        tool_caller: ToolCaller | None = None,
        timeout: float | None = None,
        journal: HostJournal | None = None,
        limits: SandboxLimits | None = None,
        holder: Hashable | None = None,
    ) -> ExecutionResult:
        """Run a snippet on a worker thread; cancelling the caller interrupts the snippet at once.

        `services` serve its tool calls, resource reads and questions about the catalog (the gateway's
        one per-run object); `tool_caller` alone serves tool calls only (an embedding without a
        catalog). With a `journal`, the host's answers are recorded in it, after those it already
        holds are replayed (a run resumed after an approval). `limits` replaces the sandbox's own for
        this one execution (a background execution's wall time and fuel). `holder` is the caller whose
        share of the slots the run takes (all but one of them); None (no callers to tell apart) may
        take every slot."""
        limits = limits or self.limits
        execution = ExecutionState(
            limits, self.timeout_for(timeout, limits), _served(services, tool_caller), journal
        )
        execution.loop = asyncio_loop()
        busy = self._busy()
        if busy is not None:
            return failed_result(execution, busy, fuel=0)
        results: list[ExecutionResult] = []
        used: list[Slot] = []
        try:
            async with anyio.create_task_group() as calls:  # the calls the snippet runs side by side
                in_flight = execution.in_flight = CallsInFlight(calls)
                try:
                    async with self._shares.held(holder):
                        results.append(await self._on_worker(code, execution, used))
                finally:
                    if in_flight.running:  # a run that ended leaves no call behind
                        calls.cancel_scope.cancel()  # (only then: cancelling costs 4x the group)
        except anyio.get_cancelled_exc_class():
            execution.cancel()
            raise
        finally:
            for slot in used:  # once the response is out, the prewarm thread no longer competes with it
                self._replenish_soon(slot, execution.loop)
        return results[0]

    @staticmethod
    def _replenish_soon(slot: Slot, loop: asyncio.AbstractEventLoop | None) -> None:
        if loop is None:  # another anyio backend (trio): no timer of its own to borrow
            slot.replenish()
        else:
            loop.call_later(REPLENISH_DELAY_SECONDS, slot.replenish)

    async def _on_worker(self, code: str, execution: ExecutionState, used: list[Slot]) -> ExecutionResult:
        """`_execute` on a worker thread, in one of the sandbox's slots."""
        # Abandoned on cancel so that the caller can interrupt the worker instead of waiting for it.
        if execution.loop is None:  # another anyio backend (trio): its own worker threads
            return await anyio.to_thread.run_sync(
                self._execute, code, execution, used, limiter=self._limiter, abandon_on_cancel=True
            )
        try:  # a free slot is the common case: no checkpoint (a loop iteration) to take it
            self._limiter.acquire_nowait()
        except anyio.WouldBlock:
            await self._limiter.acquire()
        try:
            return await self._workers.run(self._execute, code, execution, used)
        finally:
            self._limiter.release()

    def execute_sync(
        self, code: str, tool_caller: ToolCaller | None = None, timeout: float | None = None
    ) -> ExecutionResult:
        """Run a snippet on the calling thread. Tool calls need an anyio worker thread (see `execute`)."""
        services = _served(None, tool_caller)
        return self._execute(code, ExecutionState(self.limits, self.timeout_for(timeout), services))

    def _execute(
        self, code: str, execution: ExecutionState, used: list[Slot] | None = None
    ) -> ExecutionResult:
        """Run on a free slot. `used` gets that slot, for the caller to replenish once the result has
        reached it; without `used`, the slot is replenished here, as the result is returned."""
        execution.restart_clock()  # queueing for a slot is not the snippet's time
        try:
            code.encode("utf-8")
        except UnicodeEncodeError as exc:  # only UTF-8 crosses into the sandbox
            error = SnippetError(
                f"the snippet is not valid text: a lone surrogate at position {exc.start}; "
                "write such characters as escapes, e.g. '\\ud800'",
                exc_type="UnicodeError",
            )
            return failed_result(execution, error, fuel=0)
        size = len(code.encode("utf-8"))
        if size > self.limits.max_code_bytes:
            error = CodeTooLarge(
                f"the snippet is {size} bytes, over the {self.limits.max_code_bytes}-byte cap "
                "(sandbox.max_code_bytes); move data into tool calls"
            )
            return failed_result(execution, error, fuel=0)
        slot = self._free.get()
        try:
            return self._run_in(slot, code, execution)
        finally:
            self._free.put(slot)
            if used is None or execution.cancelled:  # a cancelled caller may no longer be waiting
                slot.replenish()
            else:
                used.append(slot)

    def _run_in(self, slot: Slot, code: str, execution: ExecutionState) -> ExecutionResult:
        store, run = slot.fresh_instance()
        if execution.limits.fuel != self.limits.fuel:
            store.set_fuel(execution.limits.fuel)
        execution.interrupt = lambda: slot.interrupt(execution)
        slot.begin(execution)
        self._watchdog.watch(execution)
        try:
            outcome = self._call_run(store, run, code, execution)
        finally:
            slot.end()
            fuel = _used(store, execution.limits)
            slot.retire((store, run))
            del store, run  # the prewarm thread holds the last reference and frees it
        if isinstance(outcome, ExecutionFailed):
            return failed_result(execution, outcome, fuel=fuel)
        return outcome_result(execution, outcome, execution.limits, fuel=fuel)

    def _call_run(
        self, store: wasmtime.Store, run: Func, code: str, execution: ExecutionState
    ) -> str | ExecutionFailed:
        """The guest's outcome JSON, or why the run ended without one."""
        with bound_to_thread(execution):
            if execution.cancelled:
                return cancelled_error()
            try:
                return str(run(store, code, _run_options(execution.limits, execution.journal)))
            except wasmtime.WasmtimeError as exc:
                # Without its traceback: wasmtime-py's frame in it holds the trap, a reference cycle
                # that kept this frame, so the store and its room in the engine's pool, until a
                # collection; every run a limit, a cancellation or the host ended left one.
                return self._trap_error(execution, exc.with_traceback(None))

    def _trap_error(self, execution: ExecutionState, exc: wasmtime.WasmtimeError) -> ExecutionFailed:
        if execution.cancelled:
            return cancelled_error()
        error = execution.ended_by or translate_trap(str(exc), execution.limits, execution.timeout)
        if isinstance(error, GuestCrashed):
            # One line says what happened; the wasm backtrace is for debugging the guest only.
            trap = str(exc).strip()
            log.warning("guest trapped", extra={"trap": _trap_summary(trap)})
            log.debug("guest trap backtrace", extra={"trap": trap[:20_000]})
        return error


def _run_waits_for_share() -> None:
    log.info("a run waits for its caller's share of the execution slots (all but one of them)")


def _trap_summary(trap: str) -> str:
    """What a trap says in one line (its cause, and the frame that raised it), without the backtrace."""
    lines = [line.strip() for line in trap.splitlines() if line.strip()]
    cause = lines[lines.index("Caused by:") + 1] if "Caused by:" in lines[:-1] else (lines or [""])[-1]
    frame = next((line for line in lines if line.startswith("0:")), "")
    return f"{cause} (at {frame.removeprefix('0:').strip()})"[:300] if frame else cause[:300]


def _served(services: HostServices | None, tool_caller: ToolCaller | None) -> HostServices | None:
    """The run's host services: `services`, else those of a lone tool caller, else none."""
    if services is None and tool_caller is not None:
        return ToolsOnly(tool_caller)
    return services
