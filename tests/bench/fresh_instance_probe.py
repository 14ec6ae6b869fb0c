"""An experiment, not a benchmark row: where a fresh instance's time goes, and what an idle gap costs.

Usage: fresh_instance_probe.py [--runs N] [--gap-ms MS]

On one slot with no prewarm thread (everything on this thread, in order), each round instantiates the
component, runs `print(1)` in it, and frees it, timing the three apart; first back to back, then with
an idle sleep before each round. Instantiating and freeing are what the prewarm thread does off the
critical path (`gateway/sandbox/_instances.py`); the run is what is left on it. The free is the pooling
allocator resetting the memory the run used (handing its pages back, or with `pool_keep_resident_bytes`
restoring that much of it, so the next instance finds it resident).
A third pass spends the gap busy instead (Python spinning on this thread): if the run is as slow after
it as after idling, what the gap costs is caches that other work has evicted, not a vCPU waking up.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from gateway import Sandbox, SandboxLimits
from gateway.sandbox._host_call import ExecutionState, bound_to_thread
from gateway.sandbox._sandbox import _run_options  # pyright: ignore[reportPrivateUsage]

PHASES = ("instantiate", "run", "free")


def spin(seconds: float) -> None:
    """Keep this thread busy for `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def rounds(
    sandbox: Sandbox, runs: int, gap_seconds: float, wait: Callable[[float], None] = time.sleep
) -> dict[str, list[float]]:
    """Milliseconds of each phase, per round, `wait`ing out the gap before each."""
    limits = sandbox.limits
    slot = sandbox._slots[0]  # pyright: ignore[reportPrivateUsage]
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for _ in range(runs):
        wait(gap_seconds)
        started = time.perf_counter()
        store, run = slot.fresh_instance()
        instantiated = time.perf_counter()
        with bound_to_thread(ExecutionState(limits, 10.0, None)):
            outcome = str(run(store, "print(1)", _run_options(limits, None)))
        ran = time.perf_counter()
        del store, run
        freed = time.perf_counter()
        if '"stdout": "1\\n"' not in outcome:
            raise RuntimeError(f"print(1) went wrong: {outcome[:200]}")
        marks = (started, instantiated, ran, freed)
        for phase, start, end in zip(PHASES, marks[:-1], marks[1:], strict=True):
            times[phase].append((end - start) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20.0)
    args = parser.parse_args()
    with Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)) as sandbox:
        rounds(sandbox, 5, 0.0)  # warm-up
        back_to_back = rounds(sandbox, args.runs, 0.0)
        paced = rounds(sandbox, args.runs, args.gap_ms / 1000)
        busy = rounds(sandbox, args.runs, args.gap_ms / 1000, spin)
    print(f"| Fresh instance, `print(1)`, p50 of {args.runs} | instantiate | run | free |")
    print("|---|---|---|---|")
    passes = (
        ("back to back", back_to_back),
        (f"after {args.gap_ms:g} ms idle", paced),
        (f"after {args.gap_ms:g} ms busy", busy),
    )
    for name, times in passes:
        cells = " | ".join(f"{statistics.median(times[phase]):.2f} ms" for phase in PHASES)
        print(f"| {name} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
