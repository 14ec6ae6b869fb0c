"""What one full garbage collection costs a process serving the gateway, with start-up's heap frozen
(`gc.freeze()`, which `serve` does once the gateway has started) and without.

It builds what `serve` builds before it answers anyone: the package imported, the default config
loaded and the gateway started on it (the sandbox loaded, the children connected). Then, in each
round, it serves a few executions that call a child's tool (what a collection finds made since start)
and times `gc.collect()`, with start-up's heap tracked and frozen in turn. The figure is the pause in
which the event loop serves nobody. (`serve` freezes as soon as the gateway has started: the sandbox
and the children, loading after that, add some 2,700 tracked objects to the 130,000 before it.)

    .venv/bin/python tests/bench/gc_pause.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import anyio

from gateway import Gateway
from gateway.config._defaults import default_config

SERVED = "tools.time.get_current_time(timezone='UTC')"
EXECUTIONS_PER_ROUND = 20


async def serve_some(gateway: Gateway) -> None:
    """Executions that reach a child, as a serving gateway runs them."""
    for _ in range(EXECUTIONS_PER_ROUND):
        result = await gateway.execute_code(SERVED)
        if not result.ok:
            raise RuntimeError(result.summary())


def collection_ms() -> float:
    """Wall time of one full collection."""
    started = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - started) * 1000


async def measure(rounds: int) -> tuple[list[float], list[float], int]:
    """Full collections with start-up's heap tracked, then frozen, interleaved; and how many objects
    the collector tracked before freezing."""
    tracked: list[float] = []
    frozen: list[float] = []
    async with Gateway(default_config()) as gateway:
        with anyio.fail_after(60):
            await gateway.sandbox()
            await gateway.pool.wait_ready()
        objects = len(gc.get_objects())
        for _ in range(rounds):
            await serve_some(gateway)
            tracked.append(collection_ms())
            gc.freeze()
            await serve_some(gateway)
            frozen.append(collection_ms())
            gc.unfreeze()
    return tracked, frozen, objects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tracked, frozen, objects = anyio.run(measure, args.rounds)
    print(f"| Full collection ({objects:,} tracked objects after start-up) | median ms | spread |")
    print("|---|---|---|")
    for name, samples in (("start-up heap tracked", tracked), ("start-up heap frozen", frozen)):
        print(f"| {name} | {statistics.median(samples):.2f} | {min(samples):.2f}-{max(samples):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
