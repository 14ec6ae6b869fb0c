"""An experiment, not a benchmark row: what the hop to a worker thread and back costs an async
`execute`, with `anyio.to_thread.run_sync` (what `Sandbox.execute` used) and with a bare worker thread
that waits on a queue and answers through `call_soon_threadsafe` (what `WorkerThreads` in
`gateway/sandbox/_hop.py` now does, after this measurement).

`print(1)` through async `execute` took about 0.6 ms more than `execute_sync` when paced, and this is
where it went: into the thread ("in", from the call to the function starting on the worker) and back
("back", from the function returning to the caller resuming). Each way is timed back to back and with
an idle gap before each call, as between a client's calls.

    .venv/bin/python tests/bench/thread_hop_probe.py [--calls 200] [--gap-ms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread

Job = tuple[Callable[[], float], "asyncio.Future[float]", asyncio.AbstractEventLoop]


def now() -> float:
    """The moment the function runs on the worker thread."""
    return time.perf_counter()


class BareWorker:
    """One daemon thread taking jobs from a queue and answering each through the loop's thread-safe call."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="bare-worker", daemon=True).start()

    def _serve(self) -> None:
        while True:
            function, future, loop = self._jobs.get()
            loop.call_soon_threadsafe(future.set_result, function())

    async def run(self, function: Callable[[], float]) -> float:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[float] = loop.create_future()
        self._jobs.put((function, future, loop))
        return await future


async def hop_us(hop: Callable[[], Awaitable[float]], calls: int, gap: float) -> tuple[float, float]:
    """Medians, in microseconds, of the way in and the way back."""
    into: list[float] = []
    back: list[float] = []
    for _ in range(calls):
        if gap:
            await anyio.sleep(gap)
        started = time.perf_counter()
        ran = await hop()
        returned = time.perf_counter()
        into.append((ran - started) * 1e6)
        back.append((returned - ran) * 1e6)
    return statistics.median(into), statistics.median(back)


async def main(calls: int, gap: float) -> None:
    limiter = anyio.CapacityLimiter(4)
    worker = BareWorker()
    hops: dict[str, Callable[[], Awaitable[Any]]] = {
        "anyio.to_thread.run_sync": lambda: anyio.to_thread.run_sync(
            now, limiter=limiter, abandon_on_cancel=True
        ),
        "bare thread, queue + call_soon_threadsafe": lambda: worker.run(now),
    }
    for hop in hops.values():
        await hop_us(hop, 20, 0)  # start the threads
    print(f"| Hop, median of {calls} | back to back: in / back | after {gap * 1000:g} ms idle: in / back |")
    print("|---|---|---|")
    for name, hop in hops.items():
        tight = await hop_us(hop, calls, 0)
        paced = await hop_us(hop, calls, gap)
        print(f"| {name} | {tight[0]:.0f} / {tight[1]:.0f} us | {paced[0]:.0f} / {paced[1]:.0f} us |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20.0)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.gap_ms / 1000))
