"""The sandbox runner: a fresh wasm instance per execution, under fuel, epoch, memory and output limits."""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.to_thread
import wasmtime
from wasmtime.component import Func, Linker, Record

from gateway._engine import load_component, make_engine
from gateway._errors import (
    CodeTooLarge,
    ExecutionFailed,
    GuestCrashed,
    MemoryLimitExceeded,
    SandboxUnavailable,
    SnippetError,
)
from gateway._host import Execution, ToolCaller, host_call, use_execution
from gateway._limits import SandboxLimits
from gateway._pool import InstancePool
from gateway._result import ErrorInfo, ExecutionResult
from gateway._traps import translate_trap

__all__ = ["HOST_INTERFACE", "Sandbox"]

log = logging.getLogger(__name__)

HOST_INTERFACE = "codemode:sandbox/host@0.1.0"
EPOCH_TICK_SECONDS = 0.01
# Core instances, memories and tables a fresh instance of the component creates (measured with
# a probe build: componentize-py links libc, libpython and the bindings as separate core modules).
_MAX_INSTANCES = 64
_MAX_MEMORIES = 2
_MAX_TABLES = 8
_INSTANTIATE_TICKS = int(60 / EPOCH_TICK_SECONDS)


class _EpochTicker:
    """Advances the engine's epoch every tick; a store's deadline is a number of ticks."""

    def __init__(self, engine: wasmtime.Engine) -> None:
        self._engine = engine
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="codemode-epoch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(EPOCH_TICK_SECONDS):
            self._engine.increment_epoch()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


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


def _capped(text: str, limit: int) -> tuple[str, bool]:
    # The guest caps its own streams; this holds even if a snippet tampered with the guest's capture.
    data = text.encode()
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore") + f"\n[... truncated at {limit} bytes by the host]\n", True


class Sandbox:
    """One hardened engine, linker and compiled component; a fresh store and instance per execution."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        component_path: Path | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self._engine, fingerprint = make_engine(self.limits.max_wasm_stack_bytes)
        loaded = load_component(self._engine, fingerprint, path=component_path, cache_dir=cache_dir)
        self.component_sha256 = loaded.sha256
        self.compiled_on_load = loaded.compiled
        self._component = loaded.component
        self._linker = Linker(self._engine)
        with self._linker.root() as root, root.add_instance(HOST_INTERFACE) as host:
            host.add_func("call", host_call)
        self._limiter = anyio.CapacityLimiter(self.limits.max_concurrent_executions)
        self._ticker = _EpochTicker(self._engine)
        self._pool = InstancePool(self._instantiate, self.limits.prewarm_instances)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop prewarming and the epoch ticker; executions in flight still end at their fuel limit."""
        self._pool.close()
        self._ticker.close()

    def _instantiate(self) -> tuple[wasmtime.Store, Func]:
        store = wasmtime.Store(self._engine)
        store.set_limits(
            memory_size=self.limits.memory_bytes,
            instances=_MAX_INSTANCES,
            memories=_MAX_MEMORIES,
            tables=_MAX_TABLES,
        )
        store.set_fuel(self.limits.fuel)
        store.set_epoch_deadline(_INSTANTIATE_TICKS)  # instantiation runs start functions, which check epochs
        instance = self._linker.instantiate(store, self._component)
        run = instance.get_func(store, "run")
        if run is None:
            raise SandboxUnavailable("the sandbox component exports no `run` function")
        return store, run

    def timeout_for(self, requested: float | None) -> float:
        """The wall budget for one execution: the request's, capped by the config's."""
        configured = self.limits.timeout_seconds
        return configured if requested is None else max(0.001, min(float(requested), configured))

    async def execute(
        self, code: str, *, tool_caller: ToolCaller | None = None, timeout: float | None = None
    ) -> ExecutionResult:
        """Run a snippet in a fresh instance on a worker thread; the event loop never blocks on wasm."""
        return await anyio.to_thread.run_sync(
            self.execute_sync, code, tool_caller, timeout, limiter=self._limiter, abandon_on_cancel=False
        )

    def execute_sync(
        self, code: str, tool_caller: ToolCaller | None = None, timeout: float | None = None
    ) -> ExecutionResult:
        """Run a snippet on the calling thread. Tool calls need an anyio worker thread (see `execute`)."""
        execution = Execution(self.limits, self.timeout_for(timeout), tool_caller)
        size = len(code.encode("utf-8", "replace"))
        if size > self.limits.max_code_bytes:
            error = CodeTooLarge(
                f"the snippet is {size} bytes, over the {self.limits.max_code_bytes}-byte cap "
                "(sandbox.max_code_bytes); move data into tool calls"
            )
            return self._failed(execution, error, fuel=0)
        try:
            store, run = self._pool.take()
        except wasmtime.WasmtimeError as exc:
            raise SandboxUnavailable(f"cannot instantiate the sandbox component: {exc}") from exc
        store.set_fuel(self.limits.fuel)  # what instantiation used is not the snippet's
        store.set_epoch_deadline(int(execution.timeout / EPOCH_TICK_SECONDS) + 1)
        with use_execution(execution):
            try:
                outcome: Any = run(store, code, _run_options(self.limits))
            except wasmtime.WasmtimeError as exc:
                error = execution.ended_by or translate_trap(str(exc), self.limits, execution.timeout)
                if isinstance(error, GuestCrashed):
                    log.warning("guest trapped", extra={"trap": str(exc)[:2000]})
                return self._failed(execution, error, fuel=self.limits.fuel - store.get_fuel())
        return self._finish(execution, outcome, fuel=self.limits.fuel - store.get_fuel())

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
