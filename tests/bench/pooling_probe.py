"""An experiment, not a benchmark row: wasmtime's pooling allocator against the default (on-demand) one.

Usage: pooling_probe.py [ondemand | pooling | pooling-resident] [--rounds N]

Two fib(25) executions at once in one process scale worse than in two processes (see the host-call
levers section of docs/benchmarks.md): the loss is inside wasm, with the GIL released, in what
instances share in one address space (every instance maps, protects and unmaps memory, and each such
change interrupts the other thread's core). The pooling allocator reuses its slots instead, and with
`linear_memory_keep_resident` resets a slot's first pages by zeroing them instead of handing them back
to the kernel. This probe configures it through wasmtime's C API (wasmtime-py has no Python setter for
it) with the engine settings the gateway uses, and prints the 2-at-once ratio and `print(1)` per
execution. Each variant compiles the component once into its own cache directory (the pooling
allocator is part of the engine's configuration).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import platformdirs
import wasmtime

from gateway import Sandbox, SandboxLimits
from gateway.sandbox import _engine, _slots

FIB = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(25)\n"
SLOTS_PER_ENGINE = 16  # instances per engine: the prewarmed ones, the running one, one being dropped
KEEP_RESIDENT_BYTES = 64 << 20


def pooled_engine(resident: bool) -> Any:
    def make_engine(max_wasm_stack: int) -> tuple[wasmtime.Engine, str]:
        from wasmtime import _ffi  # pyright: ignore[reportPrivateUsage]

        ffi: Any = _ffi
        settings = _engine._engine_settings(max_wasm_stack)  # pyright: ignore[reportPrivateUsage]
        config = wasmtime.Config()
        for name, value in settings.items():
            setattr(config, name, value)
        pool = ffi.wasmtime_pooling_allocation_config_new()
        ffi.wasmtime_pooling_allocation_config_total_component_instances_set(pool, SLOTS_PER_ENGINE)
        ffi.wasmtime_pooling_allocation_config_total_core_instances_set(pool, SLOTS_PER_ENGINE * 64)
        ffi.wasmtime_pooling_allocation_config_total_memories_set(pool, SLOTS_PER_ENGINE * 2)
        ffi.wasmtime_pooling_allocation_config_total_tables_set(pool, SLOTS_PER_ENGINE * 8)
        ffi.wasmtime_pooling_allocation_config_max_memories_per_component_set(pool, 2)
        ffi.wasmtime_pooling_allocation_config_max_tables_per_component_set(pool, 8)
        ffi.wasmtime_pooling_allocation_config_max_core_instances_per_component_set(pool, 64)
        ffi.wasmtime_pooling_allocation_config_max_memory_size_set(pool, SandboxLimits().memory_bytes)
        ffi.wasmtime_pooling_allocation_config_table_elements_set(pool, 100_000)
        ffi.wasmtime_pooling_allocation_config_max_component_instance_size_set(pool, 4 << 20)
        ffi.wasmtime_pooling_allocation_config_max_core_instance_size_set(pool, 4 << 20)
        if resident:
            ffi.wasmtime_pooling_allocation_config_linear_memory_keep_resident_set(pool, KEEP_RESIDENT_BYTES)
            ffi.wasmtime_pooling_allocation_config_table_keep_resident_set(pool, 1 << 20)
        ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return wasmtime.Engine(config), json.dumps({**settings, "pooling": resident}, sort_keys=True)

    return make_engine


async def batch(sandbox: Sandbox, code: str, total: int, lanes: int) -> tuple[float, float]:
    """Wall time of `total` executions on `lanes` tasks, and the median execution's."""
    each: list[float] = []

    async def lane() -> None:
        for _ in range(total // lanes):
            started = time.perf_counter()
            result = await sandbox.execute(code)
            if not result.ok:
                raise RuntimeError(result.summary())
            each.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(lanes):
            group.start_soon(lane)
    return (time.perf_counter() - started) * 1000, statistics.median(each)


async def probe(variant: str, rounds: int) -> None:
    if variant != "ondemand":
        _slots.make_engine = pooled_engine(resident=variant == "pooling-resident")
    cache = Path(platformdirs.user_cache_dir("codemode-gateway")) / f"probe-{variant}"
    limits = SandboxLimits(max_concurrent_executions=2, prewarm_instances=2)
    with Sandbox(limits, cache_dir=cache) as sandbox:
        await batch(sandbox, FIB, 4, 2)
        ratios: list[float] = []
        for _ in range(rounds):
            alone, _ = await batch(sandbox, FIB, 16, 1)
            together, _ = await batch(sandbox, FIB, 16, 2)
            ratios.append(alone / together)
        fresh = [(await batch(sandbox, "print(1)", 40, 1))[1] for _ in range(rounds)]
    print(
        f"{variant}: 2 fib(25) at once vs 1 {statistics.median(ratios):.2f}x "
        f"(spread {min(ratios):.2f}-{max(ratios):.2f}); print(1) median {statistics.median(fresh):.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("variant", choices=["ondemand", "pooling", "pooling-resident"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(probe, args.variant, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
