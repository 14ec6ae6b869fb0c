"""Each lever on the host-call path against what it replaced, interleaved in one process (issue 14).

Usage: host_call_levers.py [--rounds N] [--calls N] [--executions N] [--write docs/benchmarks.md]

Per tool call added over a direct await (the bench's `tool_call` row, same method): the snippet making N
calls to an in-process echo tool, minus the same snippet with none, minus N direct awaits; divided by N.
Each variant runs in turn within every round, so a busy machine slows them alike; the table shows the
median over the rounds and the spread (min-max). Absolute figures depend on how awake the machine is:
every call wakes the event loop's thread and then the worker's, and on an idle VM each wake-up of a
halted vCPU costs tens of microseconds, so the same code measures faster on a busy machine than on
an idle one. Variants put back the code each lever replaced:

- import: wasmtime-py's `LinkerInstance.add_func` (rebuilds the import's type on every call);
- hop: `anyio.from_thread.run` for each call, `anyio.to_thread.run_sync` for the run (what `Sandbox`
  uses without an asyncio loop);
- json: `json.loads`/`json.dumps` with options per call, and the node-by-node depth walk;
- floor: the hop alone: the call's checks as shipped, but the hop to the event loop made with no
  cancel scope and no timeout (what `ExecutionState.cancel` and the per-call deadline cost);
- floor: no hop: the call's checks as shipped, with the echo's coroutine driven on the worker thread
  (only a tool that never suspends allows it: every child lives on the event loop), for what the hop
  costs in all;
- floor: `time.time()` in the snippet, a host call (`@clock`) answered on the worker thread, for what
  the boundary and the guest cost without the hop, the checks or a tool;
- floor: a round trip between two Python threads (two locks), back to back: the wake-ups a hop pays
  at best, when neither vCPU has had time to halt in between;
- orjson: an upper bound only (no guards: it would turn NaN into null and big ints into floats), shown
  when orjson happens to be installed; it is not a dependency.

Then throughput: fib(25) executions 2 at a time against 1 at a time, in this process (one Sandbox, two
worker threads) and in two processes (one Sandbox each, so no GIL is shared), and native CPython
processes, the machine's own ceiling.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from run_bench import hop_without_its_scope, no_hop, patched
from wasmtime.component import LinkerInstance

from gateway import Sandbox, SandboxLimits
from gateway.errors import ToolCallError
from gateway.sandbox import _host_call, _sandbox, _slots
from gateway.sandbox._host_import import HostFunction

MARKER = "<!-- host-call -->"  # this section of docs/benchmarks.md, kept by run_bench.py
LATER_MARKERS = ("<!-- load -->", "<!-- soak -->")  # the sections that follow it
SNIPPET = "for i in range({calls}):\n    tools.bench.echo(i=i)\n"
CLOCK_SNIPPET = "import time\nfor i in range({calls}):\n    time.time()\n"
FLOOR = "floor: time.time() (host @clock, no hop)"
PING_PONG = "floor: one thread round trip (two locks)"
HOP_ALONE = "floor: the hop alone (no cancel scope, no timeout)"
NO_HOP = "floor: no hop (the echo driven on the worker thread)"
FIB = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(25)\n"
NATIVE = (
    "import time\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    "t = time.perf_counter()\nfor _ in range({runs}):\n    fib(25)\nprint((time.perf_counter() - t) * 1000)\n"
)
IN_ONE_PROCESS = """
import sys, time, anyio
from gateway import Sandbox, SandboxLimits
async def main():
    with Sandbox(SandboxLimits(max_concurrent_executions=1)) as sandbox:
        await sandbox.execute(sys.argv[2])
        print("ready", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        for _ in range(int(sys.argv[1])):
            assert (await sandbox.execute(sys.argv[2])).ok
        print((time.perf_counter() - started) * 1000, flush=True)
anyio.run(main)
"""


async def echo(name: str, args: dict[str, Any]) -> Any:
    return args


def generic_import(instance: LinkerInstance, name: str, function: HostFunction) -> None:
    instance.add_func(name, function)


def old_depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{item} is not a JSON number (a literal too large for a float)")
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType, reportUnknownVariableType]
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return deepest


def old_parse_json(text: str, what: str) -> Any:
    try:
        value = json.loads(text, parse_constant=_host_call._not_json)  # pyright: ignore[reportPrivateUsage]
        depth = old_depth(value)
    except ValueError as exc:
        raise _host_call._Refused(ToolCallError, f"{what} are not valid JSON: {exc}") from None  # pyright: ignore[reportPrivateUsage]
    if depth > _host_call.MAX_JSON_DEPTH:
        raise _host_call._Refused(ToolCallError, f"{what} nest deeper")  # pyright: ignore[reportPrivateUsage]
    return value


def old_encode(result: Any) -> str:
    encoded = json.dumps(result, ensure_ascii=False, allow_nan=False)
    try:
        encoded.encode()
    except UnicodeEncodeError:
        return json.dumps(result, allow_nan=False)
    return encoded


def make_sandbox(calls: int) -> Sandbox:
    return Sandbox(SandboxLimits(max_tool_calls=max(calls, 100), max_concurrent_executions=1))


async def per_call_us(sandbox: Sandbox, calls: int) -> float:
    async def timed(count: int) -> float:
        started = time.perf_counter()
        result = await sandbox.execute(SNIPPET.format(calls=count), tool_caller=echo)
        if not result.ok or len(result.tool_calls) != count:
            raise RuntimeError(result.summary())
        return time.perf_counter() - started

    with_calls = await timed(calls)
    without = await timed(0)
    started = time.perf_counter()
    for i in range(calls):
        await echo("bench.echo", {"i": i})
    direct = time.perf_counter() - started
    return (with_calls - without - direct) / calls * 1e6


def thread_round_trip_us(trips: int = 2000) -> float:
    """Two Python threads handing two locks back and forth: the two wake-ups any hop to another
    thread and back pays (on an idle VM, waking a halted vCPU dominates them)."""
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()

    def other() -> None:
        for _ in range(trips):
            ping.acquire()
            pong.release()

    thread = threading.Thread(target=other)
    thread.start()
    started = time.perf_counter()
    for _ in range(trips):
        ping.release()
        pong.acquire()
    took = time.perf_counter() - started
    thread.join()
    return took / trips * 1e6


async def clock_call_us(sandbox: Sandbox, calls: int) -> float:
    """A host call that never leaves the worker thread (`time.time()`, the host's `@clock`): the
    boundary and the guest's side of a call, without the hop or a tool."""

    async def timed(count: int) -> float:
        started = time.perf_counter()
        result = await sandbox.execute(CLOCK_SNIPPET.format(calls=count))
        if not result.ok:
            raise RuntimeError(result.summary())
        return time.perf_counter() - started

    return (await timed(calls) - await timed(0)) / calls * 1e6


def summary(samples: list[float], unit: str) -> str:
    return f"{statistics.median(samples):.0f} {unit} (spread {min(samples):.0f}-{max(samples):.0f})"


Patches = list[tuple[Any, dict[str, Any]]]


async def measure_calls(rounds: int, calls: int) -> dict[str, list[float]]:
    """Per-call cost of every variant, interleaved round by round."""
    with patched(_slots, define_host_call=generic_import):
        generic = make_sandbox(calls)
    ours = make_sandbox(calls)
    no_loop: Callable[[], None] = lambda: None  # noqa: E731 - ExecutionState then hops with anyio
    old_json = (_host_call, {"_parse_json": old_parse_json, "_encode_for_guest": old_encode})
    variants: dict[str, tuple[Sandbox, Patches]] = {
        "all levers (as shipped)": (ours, []),
        "import: wasmtime-py add_func": (generic, []),
        "hop: anyio.from_thread.run": (ours, [(_sandbox, {"asyncio_loop": no_loop})]),
        "json: per-call options, old depth walk": (ours, [old_json]),
        "none (all three replaced)": (generic, [(_sandbox, {"asyncio_loop": no_loop}), old_json]),
        HOP_ALONE: (ours, [(_host_call, {"_wait_from_worker": hop_without_its_scope})]),
        NO_HOP: (ours, [(_host_call, {"_wait_from_worker": no_hop})]),
    }
    try:
        import orjson  # pyright: ignore[reportMissingImports]

        orjson_json = {
            "_parse_json": lambda text, what: orjson.loads(text),
            "_encode_for_guest": lambda v: orjson.dumps(v).decode(),
        }  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
        variants["orjson, no guards (upper bound)"] = (ours, [(_host_call, orjson_json)])
    except ImportError:
        pass
    samples: dict[str, list[float]] = {name: [] for name in variants}
    samples[FLOOR] = []
    samples[PING_PONG] = []
    with generic, ours:
        for sandbox in (generic, ours):
            for _ in range(3):
                await per_call_us(sandbox, calls)
        for _ in range(rounds):
            for name, (sandbox, patches) in variants.items():
                with ExitStack() as stack:
                    for target, values in patches:
                        stack.enter_context(patched(target, **values))
                    samples[name].append(await per_call_us(sandbox, calls))
            samples[FLOOR].append(await clock_call_us(ours, calls))
            samples[PING_PONG].append(thread_round_trip_us())
    return samples


async def in_lanes(sandbox: Sandbox, total: int, lanes: int) -> float:
    async def lane() -> None:
        for _ in range(total // lanes):
            result = await sandbox.execute(FIB)
            if result.value != 75025:
                raise RuntimeError(result.summary())

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(lanes):
            group.start_soon(lane)
    return (time.perf_counter() - started) * 1000


def processes_at_once(commands: list[list[str]], stdin: bool) -> float:
    """The slowest of processes started together, each printing its own timing last."""
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for command in commands
    ]
    if stdin:  # wait until every one is loaded, then start them together
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
    return max(float(proc.communicate(timeout=600)[0].strip().splitlines()[-1]) for proc in procs)


async def measure_throughput(rounds: int, executions: int) -> dict[str, list[float]]:
    ratios: dict[str, list[float]] = {"in one process": [], "in two processes": [], "native ceiling": []}
    sandboxed = [sys.executable, "-c", IN_ONE_PROCESS]
    with Sandbox(SandboxLimits(max_concurrent_executions=2)) as sandbox:
        await in_lanes(sandbox, 2, 2)
        for _ in range(rounds):
            alone = await in_lanes(sandbox, executions, 1)
            ratios["in one process"].append(alone / await in_lanes(sandbox, executions, 2))
            one = processes_at_once([[*sandboxed, str(executions), FIB]], stdin=True)
            two = processes_at_once([[*sandboxed, str(executions // 2), FIB]] * 2, stdin=True)
            ratios["in two processes"].append(one / two)
            native = [sys.executable, "-c", NATIVE.format(runs=executions * 3)]
            alone_native = processes_at_once([native], stdin=False)
            ratios["native ceiling"].append(2 * alone_native / processes_at_once([native] * 2, stdin=False))
    return ratios


def render(
    calls: dict[str, list[float]],
    throughput: dict[str, list[float]],
    args: argparse.Namespace,
    loads: tuple[float, float],
) -> str:
    """The section for docs/benchmarks.md."""
    shipped = statistics.median(calls["all levers (as shipped)"])
    command = shlex.join([os.path.relpath(sys.executable), *sys.argv])
    lines = [
        MARKER,
        "## Host-call levers (issue 14)",
        "",
        f"`{command}` on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}, {os.cpu_count()} cores, "
        f"load average (1 min) {loads[0]:.2f} at the start and {loads[1]:.2f} at the end (other work "
        "shares the machine: every variant runs in turn within each round, so it slows them alike).",
        "",
        f"| Host call, variant | Per tool call over a direct await ({args.calls} calls) | vs as shipped |",
        "|---|---|---|",
    ]
    lines += [
        f"| {name} | {summary(samples, 'us')}, median of {len(samples)} rounds | "
        f"{statistics.median(samples) / shipped:.2f}x |"
        for name, samples in calls.items()
    ]
    lines += [
        "",
        f"| Throughput, 2 fib(25) executions at once vs 1 ({args.executions} per batch) | Ratio |",
        "|---|---|",
    ]
    lines += [
        f"| {name} | {statistics.median(ratios):.2f}x (spread {min(ratios):.2f}-{max(ratios):.2f}), "
        f"median of {len(ratios)} |"
        for name, ratios in throughput.items()
    ]
    doc = __doc__ or ""
    method = doc[doc.index("Per tool call") :].strip()
    return "\n".join([*lines, "", method, ""])


def write_section(path: Path, section: str) -> None:
    """Put `section` in `path` in place of the previous one, else before the load and soak sections."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    later = [text.index(marker) for marker in LATER_MARKERS if marker in text]
    if MARKER in text:
        start = text.index(MARKER)
        after = [index for index in later if index > start]
        before, rest = text[:start], text[min(after) :] if after else ""
    elif later:
        before, rest = text[: min(later)], text[min(later) :]
    else:
        before, rest = text, ""
    parts = [before.rstrip(), section.rstrip(), rest.rstrip()]
    path.write_text("\n\n".join(part for part in parts if part) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--executions", type=int, default=16, help="fib(25) executions per batch")
    parser.add_argument("--write", type=Path, metavar="PATH", help="also write the section here")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    calls = anyio.run(measure_calls, args.rounds, args.calls)
    throughput = anyio.run(measure_throughput, max(args.rounds // 3, 1), args.executions)
    section = render(calls, throughput, args, (start_load, os.getloadavg()[0]))
    print(section)
    if args.write is not None:
        write_section(args.write, section)
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
