"""wasmtime's pooling allocator for a slot's engine, set through the C API that wasmtime-py wraps.

Why: with the default (on-demand) allocator every fresh instance maps, protects and unmaps its own
memory, and its first touches of the snapshot heap fault page by page; two executions in one process
also interrupt each other's core with those mapping changes. The pool reserves its slots once, and a
slot's first `sandbox.pool_keep_resident_bytes` are zeroed for reuse instead of handed back to the
kernel. `tests/bench/pooling_probe.py` measures what it saves.

wasmtime-py has no Python setter for it, so this reaches its private `_ffi` bindings. If they are
missing (another wasmtime-py), the engine keeps on-demand allocation and says so once in the log;
tests/sandbox/test_pooling.py fails, so an upgrade that loses it is noticed.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass
from typing import Any

import wasmtime

__all__ = [
    "MAX_CORE_INSTANCES",
    "MAX_MEMORIES",
    "MAX_TABLES",
    "PoolSize",
    "use_pooling",
]

log = logging.getLogger("gateway.sandbox")

# Core instances, memories and tables a fresh instance of the component creates (componentize-py
# links libc, libpython and the bindings as separate core modules); generous, but bounded. Each
# store's limits hold it to these too (`_slots.py`).
MAX_CORE_INSTANCES = 64
MAX_MEMORIES = 2
MAX_TABLES = 8
# Room for the tables' elements and the instance state of a module as large as libpython.
_TABLE_ELEMENTS = 100_000
_INSTANCE_STATE_BYTES = 4 << 20

_PREFIX = "wasmtime_pooling_allocation_"
_CALLS = ("config_new", "config_delete", "strategy_set")


@dataclass(frozen=True)
class PoolSize:
    """How much one engine's pool holds: instances alive at once, each memory's largest size, and
    the bytes of each memory kept resident (zeroed) for the next instance instead of handed back."""

    instances: int
    memory_bytes: int
    keep_resident_bytes: int

    def settings(self) -> dict[str, int]:
        """Each setting of the pool, by the name of its setter."""
        return {
            "total_component_instances": self.instances,
            "total_core_instances": self.instances * MAX_CORE_INSTANCES,
            "total_memories": self.instances * MAX_MEMORIES,
            "total_tables": self.instances * MAX_TABLES,
            # Left at their defaults (a thousand each), the async stacks and GC heaps the guest never
            # uses would map a guard page apiece: 64 slots' engines then pass Linux's map count limit.
            "total_stacks": self.instances,
            "total_gc_heaps": self.instances,
            "max_core_instances_per_component": MAX_CORE_INSTANCES,
            "max_memories_per_component": MAX_MEMORIES,
            "max_tables_per_component": MAX_TABLES,
            "max_memory_size": self.memory_bytes,
            "table_elements": _TABLE_ELEMENTS,
            "max_component_instance_size": _INSTANCE_STATE_BYTES,
            "max_core_instance_size": _INSTANCE_STATE_BYTES,
            "linear_memory_keep_resident": self.keep_resident_bytes,
            "table_keep_resident": 1 << 20,
        }


def _bindings(size: PoolSize) -> Any | None:
    ffi: Any = getattr(wasmtime, "_ffi", None)
    names = [*_CALLS, *(f"config_{setting}_set" for setting in size.settings())]
    return ffi if ffi is not None and all(hasattr(ffi, _PREFIX + name) for name in names) else None


_warned = False


def use_pooling(config: wasmtime.Config, size: PoolSize) -> bool:
    """Make engines built from `config` allocate instances from a pool of `size`; False (logged
    once) where this wasmtime-py does not expose the setting."""
    global _warned
    ffi = _bindings(size)
    # The pool reserves address space for every memory up front (tens of GiB, never touched); under
    # a cap on address space wasmtime could not make the engine at all, and would abort the process.
    capped = resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    if ffi is None or capped:
        if not _warned:
            _warned = True
            why = "the address space is capped (ulimit -v)" if capped else "this wasmtime-py exposes none"
            log.warning("no pooling allocator: fresh instances are slower", extra={"why": why})
        return False
    pool = ffi.wasmtime_pooling_allocation_config_new()
    try:
        for setting, value in size.settings().items():
            getattr(ffi, f"{_PREFIX}config_{setting}_set")(pool, value)
        ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)  # copies the settings
    finally:
        ffi.wasmtime_pooling_allocation_config_delete(pool)
    return True
