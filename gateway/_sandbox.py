"""The sandbox runner: a fresh wasm instance per execution, under fuel, epoch, memory and output limits."""

from __future__ import annotations

import json
import logging
import queue
import secrets
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.to_thread
import wasmtime
from wasmtime.component import Record

from gateway._errors import (
    CodeTooLarge,
    ExecutionCancelled,
    ExecutionFailed,
    GatewayBusy,
    GuestCrashed,
    MemoryLimitExceeded,
    SnippetError,
)
from gateway._host import Execution, ToolCaller, use_execution
from gateway._limits import SandboxLimits
from gateway._result import ErrorInfo, ExecutionResult
from gateway._slots import HOST_INTERFACE, Slot, Watchdog, load_slots
from gateway._traps import translate_trap

__all__ = ["HOST_INTERFACE", "Sandbox"]

log = logging.getLogger(__name__)


def _run_options(limits: SandboxLimits) -> Record:
    options = Record()
    for name, value in {
        "seed": secrets.token_bytes(32),
        "max-stdout-bytes": limits.max_stdout_bytes,
        "max-stderr-bytes": limits.max_stderr_bytes,
        "max-value-bytes": limits.max_value_bytes,
    }.items():
        setattr(options, name, value)
    return options


def _used(store: wasmtime.Store, limits: SandboxLimits) -> int:
    return limits.fuel - store.get_fuel()


def _cancelled() -> ExecutionCancelled:
    return ExecutionCancelled("the execution was cancelled by the client")


def _capped(text: str, limit: int) -> tuple[str, bool]:
    # The guest caps its own streams; this holds even if a snippet tampered with the guest's capture.
    data = text.encode()
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore") + f"\n[... truncated at {limit} bytes by the host]\n", True


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
        self._free: queue.SimpleQueue[Slot] = queue.SimpleQueue()
        for slot in slots:
            self._free.put(slot)
        self._limiter = anyio.CapacityLimiter(len(slots))
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

    def timeout_for(self, requested: float | None) -> float:
        """The wall budget for one execution: the request's, capped by the config's."""
        configured = self.limits.timeout_seconds
        return configured if requested is None else max(0.001, min(float(requested), configured))

    def _busy(self) -> GatewayBusy | None:
        waiting = self._limiter.statistics().tasks_waiting
        if self._limiter.available_tokens > 0 or waiting < self.limits.max_queued_executions:
            return None
        return GatewayBusy(
            f"the gateway is busy: {self._limiter.total_tokens:g} executions running and {waiting} queued "
            f"(sandbox.max_concurrent_executions, sandbox.max_queued_executions); retry shortly"
        )

    async def execute(
        self, code: str, *, tool_caller: ToolCaller | None = None, timeout: float | None = None
    ) -> ExecutionResult:
        """Run a snippet on a worker thread; cancelling the caller interrupts the snippet at once."""
        execution = Execution(self.limits, self.timeout_for(timeout), tool_caller)
        busy = self._busy()
        if busy is not None:
            return self._failed(execution, busy, fuel=0)
        try:
            # Abandoned on cancel so that this task can interrupt the worker instead of waiting for it.
            return await anyio.to_thread.run_sync(
                self._execute, code, execution, limiter=self._limiter, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            execution.cancel()
            raise

    def execute_sync(
        self, code: str, tool_caller: ToolCaller | None = None, timeout: float | None = None
    ) -> ExecutionResult:
        """Run a snippet on the calling thread. Tool calls need an anyio worker thread (see `execute`)."""
        return self._execute(code, Execution(self.limits, self.timeout_for(timeout), tool_caller))

    def _execute(self, code: str, execution: Execution) -> ExecutionResult:
        execution.restart_clock()  # queueing for a slot is not the snippet's time
        size = len(code.encode("utf-8", "replace"))
        if size > self.limits.max_code_bytes:
            error = CodeTooLarge(
                f"the snippet is {size} bytes, over the {self.limits.max_code_bytes}-byte cap "
                "(sandbox.max_code_bytes); move data into tool calls"
            )
            return self._failed(execution, error, fuel=0)
        slot = self._free.get()
        try:
            return self._run_in(slot, code, execution)
        finally:
            self._free.put(slot)

    def _run_in(self, slot: Slot, code: str, execution: Execution) -> ExecutionResult:
        store, run = slot.fresh_instance()
        execution.interrupt = lambda: slot.interrupt(execution)
        slot.begin(execution)
        try:
            with use_execution(execution):
                if execution.cancelled:
                    return self._failed(execution, _cancelled(), fuel=0)
                try:
                    outcome: Any = run(store, code, _run_options(self.limits))
                except wasmtime.WasmtimeError as exc:
                    return self._failed(
                        execution, self._trap_error(execution, exc), fuel=_used(store, self.limits)
                    )
        finally:
            slot.end()
        return self._finish(execution, outcome, fuel=_used(store, self.limits))

    def _trap_error(self, execution: Execution, exc: wasmtime.WasmtimeError) -> ExecutionFailed:
        if execution.cancelled:
            return _cancelled()
        error = execution.ended_by or translate_trap(str(exc), self.limits, execution.timeout)
        if isinstance(error, GuestCrashed):
            log.warning("guest trapped", extra={"trap": str(exc)[:2000]})
        return error

    def _failed(self, execution: Execution, error: ExecutionFailed, *, fuel: int) -> ExecutionResult:
        return ExecutionResult(
            ok=False,
            error=ErrorInfo.from_exception(error),
            tool_calls=execution.tool_calls,
            fuel=fuel,
            ms=round((time.monotonic() - execution.started) * 1000, 3),
        )

    def _finish(self, execution: Execution, outcome: Any, *, fuel: int) -> ExecutionResult:
        limits = self.limits
        stdout, stdout_cut = _capped(outcome.stdout, limits.max_stdout_bytes + 512)
        stderr, stderr_cut = _capped(outcome.stderr, limits.max_stderr_bytes + 512)
        error: ErrorInfo | None = None
        failure = outcome.error
        if failure is not None:
            error = self._snippet_error(failure)
        value: Any = None
        value_json = getattr(outcome, "value-json")
        if value_json is not None:
            value = json.loads(value_json) if len(value_json) <= 2 * limits.max_value_bytes + 1024 else None
        return ExecutionResult(
            ok=error is None,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=getattr(outcome, "stdout-truncated") or stdout_cut,
            stderr_truncated=getattr(outcome, "stderr-truncated") or stderr_cut,
            value=value,
            value_repr=_capped(getattr(outcome, "value-repr") or "", limits.max_value_bytes + 512)[0] or None,
            error=error,
            tool_calls=execution.tool_calls,
            fuel=fuel,
            ms=round((time.monotonic() - execution.started) * 1000, 3),
        )

    def _snippet_error(self, failure: Any) -> ErrorInfo:
        exc_type, message, traceback = str(failure.type), str(failure.message), str(failure.traceback)
        if exc_type == "MemoryError":
            # A failed memory.grow surfaces in the guest as MemoryError: name the limit behind it.
            return ErrorInfo.from_exception(
                MemoryLimitExceeded(
                    f"memory limit reached: the snippet needed more than {self.limits.memory_bytes:,} bytes "
                    "(sandbox.memory_bytes); process data in smaller pieces"
                )
            )
        cap = self.limits.max_value_bytes
        return ErrorInfo.from_exception(
            SnippetError(
                _capped(message, cap)[0], exc_type=exc_type[:200], traceback=_capped(traceback, cap)[0]
            )
        )
