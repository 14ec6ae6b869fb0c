"""Execution slots: one engine each, so interrupting one execution never touches another.

wasmtime checks a store's epoch deadline at function entries and loop back-edges. Each slot's
store runs with a deadline one epoch ahead, and nothing advances a slot's epoch except the
watchdog (the wall-clock deadline passed) or a cancellation: bumping that engine's epoch once
interrupts exactly the execution running in that slot, within microseconds of CPython work.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import wasmtime
from wasmtime.component import Component, Func, Linker

from gateway.errors import SandboxUnavailable
from gateway.sandbox._engine import LoadedComponent, load_artifact, load_component, make_engine
from gateway.sandbox._host_call import ExecutionState, host_call
from gateway.sandbox._host_import import define_host_call
from gateway.sandbox._instances import InstancePool
from gateway.sandbox._pooling import MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES, PoolSize
from gateway.sandbox.limits import SandboxLimits

__all__ = ["HOST_INTERFACE", "Slot", "Watchdog", "load_slots"]

HOST_INTERFACE = "codemode:sandbox/host@0.1.0"
WATCHDOG_PERIOD_SECONDS = 0.01  # how often an interrupted execution that has not ended is interrupted again
# Instantiation runs start functions, which check epochs: never let an interrupt meant for an
# execution trap a prewarming instantiation on the same engine.
_INSTANTIATE_EPOCHS = 1 << 40
# Instances one slot's engine holds at once beyond its prewarmed ones: the one running, the one just
# run (until the prewarm thread frees it), one made inline when the prewarmed ones ran out, and one spare.
POOL_MARGIN = 4

# Waits between the last tries to instantiate into an engine whose pool was full (their sum is the patience).
_REFILL_PAUSES_SECONDS = (0.001, 0.005, 0.02, 0.05)

Instance = tuple[wasmtime.Store, Func]


Compiled = tuple[wasmtime.Engine, Component]


@dataclass(frozen=True)
class Loaded:
    """A slot's engine, its compiled component, and the linker that instantiates it there."""

    engine: wasmtime.Engine
    component: Component
    linker: Linker


def _linked(engine: wasmtime.Engine, component: Component) -> Loaded:
    linker = Linker(engine)
    with linker.root() as root, root.add_instance(HOST_INTERFACE) as host:
        define_host_call(host, "call", host_call)
    return Loaded(engine, component, linker)


@dataclass(eq=False)
class Slot:
    """An engine, its compiled component and prewarmed instances; runs one execution at a time.

    `compile` makes the engine and its component; a slot other than the first calls it at its first
    execution, so slots that executions never overlap into hold no engine at all."""

    index: int
    compile: Callable[[], Compiled]
    limits: SandboxLimits
    _loaded: Loaded | None = None
    _loading: threading.Lock = field(default_factory=threading.Lock)
    _instances: InstancePool[Instance] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _running: ExecutionState | None = None

    def __post_init__(self) -> None:
        if self.index == 0:
            self._load()
        self._instances = InstancePool(
            self._instantiate,
            self.limits.prewarm_instances,
            engine_capacity(self.limits),
            key=lambda instance: instance[0],  # freeing the store frees the instance
            # Only the first slot prewarms at start: the others, used when executions overlap
            # (the sandbox hands out the last freed slot first), hold no memory until then.
            dormant=self.index > 0,
        )

    @property
    def loaded(self) -> bool:
        """Whether this slot has made its engine (it has run an execution, or is the first slot)."""
        return self._loaded is not None

    def _load(self) -> Loaded:
        with self._loading:
            if self._loaded is None:
                self._loaded = _linked(*self.compile())
            return self._loaded

    def _instantiate(self) -> Instance:
        try:
            return self._new_instance()
        except wasmtime.WasmtimeError:
            # The instance pool counts the stores alive, so the engine is full of ones still held:
            # retired ones not yet freed, or ones in a reference cycle, which a collection frees.
            self._instances.free_retired()
            gc.collect()
        # A collection running on another thread counts its stores out (weakref callbacks) before
        # it deletes them (finalizers), and may let go of the GIL in between: give it a moment.
        for pause in _REFILL_PAUSES_SECONDS:
            try:
                return self._new_instance()
            except wasmtime.WasmtimeError:
                time.sleep(pause)
        return self._new_instance()

    def _new_instance(self) -> Instance:
        loaded = self._load()
        store = wasmtime.Store(loaded.engine)
        store.set_limits(
            memory_size=self.limits.memory_bytes,
            instances=MAX_CORE_INSTANCES,
            memories=MAX_MEMORIES,
            tables=MAX_TABLES,
        )
        store.set_fuel(self.limits.fuel)
        store.set_epoch_deadline(_INSTANTIATE_EPOCHS)
        instance = loaded.linker.instantiate(store, loaded.component)
        run = instance.get_func(store, "run")
        if run is None:
            raise SandboxUnavailable("the sandbox component exports no `run` function")
        return store, run

    def fresh_instance(self) -> Instance:
        """A never-used instance, with fresh fuel, armed to trap at the next epoch bump."""
        try:
            store, run = self._instances.take()
        except wasmtime.WasmtimeError as exc:
            raise SandboxUnavailable(f"cannot instantiate the sandbox component: {exc}") from exc
        store.set_fuel(self.limits.fuel)  # what instantiation used is not the snippet's
        store.set_epoch_deadline(1)
        return store, run

    def retire(self, instance: Instance) -> None:
        """Free a used instance on the prewarm thread: its memory reset is not the run's time."""
        self._instances.retire(instance)

    def replenish(self) -> None:
        """Free what was retired and prewarm again, on the prewarm thread: call once the execution's
        result has reached its caller."""
        self._instances.replenish()

    def begin(self, execution: ExecutionState) -> None:
        with self._lock:
            self._running = execution

    def end(self) -> None:
        with self._lock:
            self._running = None

    def interrupt(self, execution: ExecutionState) -> None:
        """Stop `execution` if it is still the one running here (safe from any thread)."""
        with self._lock:
            if self._running is execution and self._loaded is not None:
                self._loaded.engine.increment_epoch()

    def running(self) -> ExecutionState | None:
        """The execution running here, if any."""
        with self._lock:
            return self._running

    def close(self) -> None:
        self._instances.close()


class Watchdog:
    """Interrupts executions past their wall-clock budget; its thread sleeps until the next deadline."""

    def __init__(self, slots: list[Slot]) -> None:
        self._slots = slots
        self._wake = threading.Condition()
        self._next_check = math.inf  # when the thread next looks at the slots (guarded by `_wake`)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="codemode-watchdog", daemon=True)
        self._thread.start()

    def watch(self, execution: ExecutionState) -> None:
        """Have the thread look again by `execution`'s deadline: call once it runs in its slot."""
        deadline = execution.started + execution.timeout
        with self._wake:
            if deadline < self._next_check:
                self._next_check = deadline
                self._wake.notify()

    def _run(self) -> None:
        # A thread woken only by deadlines: polling would wake it, and take the GIL, on every period
        # while calls are in flight, and keep it waking while the gateway is idle.
        with self._wake:
            while not self._closed:
                now = time.monotonic()
                if now >= self._next_check:
                    self._next_check = self._interrupt_overdue(now)
                wait = self._next_check - now
                self._wake.wait(wait if math.isfinite(wait) else None)

    def _interrupt_overdue(self, now: float) -> float:
        """Interrupt every overdue execution; when to look next (an interrupted one is looked at again
        every period until it ends, as a trap waits for the guest to leave a host call)."""
        next_check = math.inf
        for slot in self._slots:
            execution = slot.running()
            if execution is None:
                continue
            deadline = execution.started + execution.timeout
            if now >= deadline:
                slot.interrupt(execution)
                deadline = now + WATCHDOG_PERIOD_SECONDS
            next_check = min(next_check, deadline)
        return next_check

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=1)


def engine_capacity(limits: SandboxLimits) -> int | None:
    """How many instances each slot's engine holds at once (None: allocated on demand, unbounded)."""
    return limits.prewarm_instances + POOL_MARGIN if limits.pooling_allocator else None


def load_slots(
    limits: SandboxLimits, *, component_path: Path | None, cache_dir: Path | None
) -> tuple[list[Slot], LoadedComponent]:
    """One slot per concurrent execution; the component is compiled (or read from cache) once, and
    each slot after the first makes its engine when an execution first needs it."""
    capacity = engine_capacity(limits)
    keep = limits.pool_keep_resident_bytes
    pool = None if capacity is None else PoolSize(capacity, limits.memory_bytes, keep)
    engine, fingerprint = make_engine(limits.max_wasm_stack_bytes, pool)
    loaded = load_component(engine, fingerprint, path=component_path, cache_dir=cache_dir)

    def another() -> Compiled:
        other, _ = make_engine(limits.max_wasm_stack_bytes, pool)
        # Same engine settings, so the artifact written (or checked) at start fits this engine too;
        # it is checked again, as it may have changed since.
        component = load_artifact(other, loaded.artifact)
        if component is None:  # a cache that was not writable: the compiled bytes, in memory
            component = Component.deserialize(other, loaded.component.serialize())
        return other, component

    slots = [Slot(0, lambda: (engine, loaded.component), limits)]
    slots += [Slot(index, another, limits) for index in range(1, limits.max_concurrent_executions)]
    return slots, loaded
