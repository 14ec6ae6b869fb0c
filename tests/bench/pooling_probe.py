"""An experiment, not a benchmark row: wasmtime's pooling allocator (the default) against on-demand.

Usage: pooling_probe.py [ondemand | pooling] [--rounds N]

Two fib(25) executions at once in one process scale worse than in two processes (see the host-call
levers section of docs/benchmarks.md): the loss is inside wasm, with the GIL released, in what
instances share in one address space (every instance maps, protects and unmaps memory, and each such
change interrupts the other thread's core). The pooling allocator (gateway/sandbox/_pooling.py)
reuses its slots instead, and resets a slot's first pages by zeroing them instead of handing them back
to the kernel. This probe prints the 2-at-once ratio and `print(1)` per execution with it, or with
the engine left on on-demand allocation. Each variant compiles the component once into its own cache
directory (the allocator is part of the engine's configuration).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import anyio
import platformdirs
import wasmtime

from gateway import Sandbox, SandboxLimits
from gateway.sandbox import _engine
from gateway.sandbox._pooling import PoolSize

FIB = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(25)\n"


def on_demand(config: wasmtime.Config, size: PoolSize) -> bool:
    """What `use_pooling` does where wasmtime-py has no pooling allocator: nothing."""
    return False


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
    if variant == "ondemand":
        _engine.use_pooling = on_demand
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
    parser.add_argument("variant", choices=["ondemand", "pooling"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(probe, args.variant, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
