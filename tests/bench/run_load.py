"""`make load`: concurrent HTTP clients against one gateway replica, then two behind HAProxy.

Usage: python -m tests.bench.run_load [--clients 16] [--seconds 15 | --requests N] [--write PATH]

Two more rows give the cost of shared state: two replicas behind HAProxy with a rate on the tool
(so every call takes a rate slot), without `state` and then with it on a local `redis-server`
(skipped where it is not installed), with the store's round trips per tool call counted by the
store itself (`INFO commandstats` before and after, not counting what a script runs inside one call).

Each client is the MCP SDK's `Client` over streamable HTTP on 2026-07-28 (a request of its own per
call, so a balancer spreads them), making `execute_code` calls whose snippet calls a child tool
(`tools.tiny.echo`) and checking each answer is its own. The same run measures one replica reached
directly, one behind HAProxy and two behind HAProxy (round robin), so the ratio's two sides share the
machine's state. Every process (the clients, HAProxy, the replicas and their children) shares this
machine's cores: the table says how many. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from mcp import Client

from tests.e2e.gateway_http import http_client
from tests.e2e.gateway_process import TINY, WAIT, environment, write_config
from tests.e2e.load_balancer import HAPROXY, NOT_INSTALLED, Frontend, free_ports, haproxy, replicas
from tests.state.redis_server import NOT_INSTALLED as NO_REDIS
from tests.state.redis_server import REDIS_SERVER, RedisServer

LOAD_MARKER = "<!-- load -->"  # where this section starts in docs/benchmarks.md
SOAK_MARKER = "<!-- soak -->"  # run_soak.py's section, kept after this one
SNIPPET = "tools.tiny.echo(text={text!r})"
# A rate no run reaches: every call takes (and keeps) a slot in its window, as a rated call does.
RATE = {"tools": {"tiny.echo": {"rate": {"calls": 1_000_000, "per_seconds": 60}}}}
RATED = "HAProxy, round robin, rate"
Runner = Callable[[str, str, dict[str, list[int]]], Awaitable[None]]
"""Measures one row: (url, balancer, the server-side pids by role)."""
SHARED = "HAProxy, round robin, rate, state"


@dataclass
class Phase:
    """One measured configuration: who served, how many clients, and what they saw."""

    replicas: int
    balancer: str
    clients: int
    latencies_ms: list[float] = field(default_factory=list[float])
    errors: Counter[str] = field(default_factory=Counter[str])
    seconds: float = 0.0
    cores: dict[str, float] = field(default_factory=dict[str, float])  # CPU used while timed, by whom
    store_commands: int | None = None  # round trips to the state store meanwhile (warm-up included)
    calls: int = 0  # every call made, warm-up included, for the store's round trips per call

    @property
    def requests(self) -> int:
        return len(self.latencies_ms) + self.errors.total()

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, pct: float) -> float:
        """Nearest-rank percentile of the successful calls' latencies (NaN if there were none)."""
        ranked = sorted(self.latencies_ms)
        if not ranked:
            return math.nan
        return ranked[min(len(ranked) - 1, max(0, math.ceil(pct / 100 * len(ranked)) - 1))]


@dataclass
class Budget:
    """When the timed calls stop: after `seconds`, or once `requests` calls have been started."""

    seconds: float
    requests: int  # 0: no count, only the time
    started: int = 0
    began: float = 0.0  # perf_counter when the timed calls began
    deadline: float = math.inf

    def begin(self) -> None:
        """Start the clock: from now on, calls are timed and counted."""
        self.began = time.perf_counter()
        self.deadline = self.began + self.seconds if not self.requests else math.inf

    def take(self) -> bool:
        """Whether another call may start; counts it."""
        if time.perf_counter() >= self.deadline or (self.requests and self.started >= self.requests):
            return False
        self.started += 1
        return True


async def one_call(client: Client, text: str) -> str | None:
    """One execute_code call; None if it answered with its own text, else what went wrong."""
    try:
        result = await client.call_tool("execute_code", {"code": SNIPPET.format(text=text), "details": True})
    except Exception as exc:  # a refusal (MCPError) or a transport failure: counted, the run goes on
        return type(exc).__name__
    if result.is_error or result.structured_content is None:
        return "tool error"
    if result.structured_content.get("value") != {"result": text}:
        return "wrong answer"
    return None


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc; 0 for one gone meanwhile."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_descendants(pid: int) -> list[int]:
    """`pid` and every process below it (a replica's children: the child server)."""
    found, index = [pid], 0
    while index < len(found):
        try:
            for task in Path(f"/proc/{found[index]}/task").iterdir():
                found.extend(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:  # it (or a thread) ended meanwhile
            pass
        index += 1
    return found


def cpu_now(pids: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """CPU seconds so far: this process (the clients) and each named group of processes, with the
    processes they started."""
    return {"clients": time.process_time()} | {
        name: sum(cpu_seconds(each) for pid in group for each in with_descendants(pid))
        for name, group in pids.items()
    }


async def drive(
    url: str, phase: Phase, budget: Budget, warmup: int, pids: Mapping[str, Sequence[int]]
) -> None:
    """`phase.clients` clients on `url`: each connects and warms up, then all call until the budget ends.
    `pids` names the server-side processes whose CPU use is recorded beside the clients'."""
    go = anyio.Event()
    before: dict[str, float] = {}
    calling = [phase.clients]  # clients still calling: the last one to stop ends the timed window

    def stopped() -> None:
        calling[0] -= 1
        if not calling[0]:  # before the clients disconnect, which is not part of the load
            phase.seconds = time.perf_counter() - budget.began
            after = cpu_now(pids)
            phase.cores = {name: (after[name] - before[name]) / phase.seconds for name in after}

    async def client_task(number: int, *, task_status: TaskStatus[None]) -> None:
        async with http_client(url, "auto") as client:
            for call in range(warmup):
                problem = await one_call(client, f"warm-{number}-{call}")
                if problem is not None:
                    raise RuntimeError(f"a warm-up call failed ({problem}): the gateway is not serving")
            phase.calls += warmup
            task_status.started()
            await go.wait()
            call = 0
            while budget.take():
                started = time.perf_counter()
                problem = await one_call(client, f"{number}-{call}")
                phase.calls += 1
                if problem is None:
                    phase.latencies_ms.append((time.perf_counter() - started) * 1000)
                else:
                    phase.errors[problem] += 1
                call += 1
            stopped()

    with anyio.fail_after(WAIT + budget.seconds * 2):
        async with anyio.create_task_group() as tg:
            for number in range(phase.clients):
                await tg.start(client_task, number)
            before.update(cpu_now(pids))
            budget.begin()
            go.set()


def replica_config(directory: Path, clients: int, *, rate: bool = False, state: str | None = None) -> Path:
    """A replica's config: the tiny child, and caps that admit every client at once; with `rate`, a
    rate on its tool, and with `state`, the store at that URL.

    Without `auth`, every 2026-07-28 client reaching a replica through HAProxy is HAProxy's address:
    the per-caller caps would throttle them all as one caller.
    """
    directory.mkdir()
    # Twice the clients: with `state` the caller's count spans the replicas, and a place freed on one
    # reaches the store just after its answer, so a cap of exactly the clients would refuse some.
    places = max(16, clients) * 2
    http = {
        "max_executions_in_flight": places,
        "max_executions_in_flight_per_caller": places,
        "max_executions_queued": places * 2,
        "max_executions_queued_per_caller": places * 2,
    }
    # No search is measured: the semantic model would only add its load to each replica's start.
    config = {
        "mcpServers": {"tiny": TINY},
        "audit": {"path": "audit.jsonl"},
        "http": http,
        "search": {"semantic": "off"},
    }
    if rate:
        config["policy"] = RATE
    if state is not None:
        config["state"] = {"url": state}
    return write_config(directory, config)


@dataclass
class Report:
    phases: list[Phase]
    clients: int
    budget: str
    load_averages: list[float]
    date: str


async def measure(clients: int, seconds: float, requests: int, warmup: int) -> Report:
    """Start two replicas (and HAProxy, if installed), then measure each configuration in turn."""
    load_at_start = os.getloadavg()[0]
    phases: list[Phase] = []

    async def run(url: str, balancer: str, pids: dict[str, list[int]]) -> None:
        phase = Phase(len(pids["replicas"]), balancer, clients)
        print(
            f"  {phase.replicas} replica(s), {balancer}: {clients} clients ...", file=sys.stderr, flush=True
        )
        await drive(url, phase, Budget(seconds, requests), warmup, pids)
        phases.append(phase)

    with tempfile.TemporaryDirectory(prefix="codemode-load-") as tmp:
        work = Path(tmp)
        configs = [replica_config(work / f"replica-{index}", clients) for index in range(2)]
        async with AsyncExitStack() as stack:
            gateways = await stack.enter_async_context(replicas(configs, environment()))
            addresses = [gateway.url.split("/")[2] for gateway in gateways]
            pids = [gateway.process.pid for gateway in gateways]
            await run(gateways[0].url, "none (direct)", {"replicas": pids[:1]})
            if HAPROXY is None:
                print(f"  skipping the rows behind a balancer: {NOT_INSTALLED}", file=sys.stderr)
            else:
                one, two = free_ports(2)
                frontends = [Frontend("one", one, addresses[:1]), Frontend("two", two, addresses)]
                balancer = await stack.enter_async_context(haproxy(work, frontends))
                both = {"replicas": pids, "haproxy": [balancer.pid]}
                await run(f"http://127.0.0.1:{one}/mcp", "HAProxy", both | {"replicas": pids[:1]})
                await run(f"http://127.0.0.1:{two}/mcp", "HAProxy, round robin", both)
        await measure_state(work, clients, run, phases)
    budget = f"{requests} requests" if requests else f"{seconds:g} s"
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Report(phases, clients, budget, [load_at_start, os.getloadavg()[0]], date)


async def measure_state(work: Path, clients: int, run: Runner, phases: list[Phase]) -> None:
    """Two replicas behind HAProxy with a rated tool, without `state` and then with a redis-server."""
    if HAPROXY is None or REDIS_SERVER is None:
        reason = NOT_INSTALLED if HAPROXY is None else NO_REDIS
        print(f"  skipping the rows with shared state: {reason}", file=sys.stderr)
        return
    [port] = free_ports(1)
    store = RedisServer(port)
    store.start()
    try:
        for balancer, url in ((RATED, None), (SHARED, store.url)):
            home = work / balancer.replace(", ", "-").replace(" ", "-")
            home.mkdir()
            configs = [replica_config(home / f"replica-{i}", clients, rate=True, state=url) for i in range(2)]
            async with replicas(configs, environment()) as gateways:
                addresses = [gateway.url.split("/")[2] for gateway in gateways]
                [front] = free_ports(1)
                async with haproxy(home, [Frontend("rated", front, addresses)]) as proxy:
                    pids = {"replicas": [gateway.process.pid for gateway in gateways], "haproxy": [proxy.pid]}
                    before = store.round_trips()
                    await run(f"http://127.0.0.1:{front}/mcp", balancer, pids)
                    if url is not None:
                        phases[-1].store_commands = store.round_trips() - before
    finally:
        store.stop()


# --- output -----------------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_line(report: Report) -> str:
    loads = " / ".join(f"{load:.2f}" for load in report.load_averages)
    return (
        f"{cpu_model()}, {os.cpu_count()} cores, shared by the clients (one Python process), HAProxy, "
        f"every replica and its child; load average (1 min) at the start / end: {loads}"
    )


def render_table(report: Report) -> str:
    """The phases as a markdown table, and the ratio of two replicas to one, both behind HAProxy."""
    lines = [
        "| Replicas | Balancer | Clients | Requests | Throughput | p50 | p99 | Errors | CPU (cores) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for phase in report.phases:
        errors = ", ".join(f"{count} {kind}" for kind, count in phase.errors.items()) or "0"
        lines.append(
            f"| {phase.replicas} | {phase.balancer} | {phase.clients} | {phase.requests} "
            f"| {phase.throughput:.1f} req/s | {phase.percentile(50):.1f} ms | {phase.percentile(99):.1f} ms "
            f"| {errors} | {cpu_text(phase.cores)} |"
        )
    return "\n".join([*lines, "", ratio_line(report.phases), "", state_line(report.phases)])


def state_line(phases: Sequence[Phase]) -> str:
    """Shared state on vs off (both with the rate), and the store's round trips per tool call."""
    by = {phase.balancer: phase for phase in phases}
    if RATED not in by or SHARED not in by:
        return f"State on vs off: not measured ({NO_REDIS if HAPROXY else NOT_INSTALLED})."
    off, on = by[RATED], by[SHARED]
    throughput = on.throughput / off.throughput if off.throughput else math.nan
    p99 = on.percentile(99) / off.percentile(99)
    trips = (on.store_commands or 0) / on.calls if on.calls else math.nan
    return (
        f"State on vs off (2 replicas, a rate on the tool): throughput x{throughput:.2f}, p99 x{p99:.2f}; "
        f"{trips:.2f} round trips to the store per tool call ({on.store_commands} for {on.calls} calls, "
        "warm-up included; INFO commandstats, a script's inner commands not counted)."
    )


def cpu_text(cores: Mapping[str, float]) -> str:
    """`clients 0.71, replicas 1.02, haproxy 0.05`: the cores each side kept busy while timed."""
    return ", ".join(f"{name} {used:.2f}" for name, used in cores.items())


def ratio_line(phases: Sequence[Phase]) -> str:
    behind = {phase.replicas: phase for phase in phases if phase.balancer != "none (direct)"}
    if 1 not in behind or 2 not in behind:
        return f"2 replicas vs 1: not measured ({NOT_INSTALLED})."
    one, two = behind[1], behind[2]
    throughput = two.throughput / one.throughput if one.throughput else math.nan
    p50 = two.percentile(50) / one.percentile(50)
    per_call = one.cores.get("replicas", math.nan) * 1000 / one.throughput if one.throughput else math.nan
    return (
        f"2 replicas vs 1, both behind HAProxy: throughput x{throughput:.2f}, p50 x{p50:.2f}. "
        f"Replica CPU per call (1 replica behind HAProxy, its children included): {per_call:.1f} ms, "
        f"about {1000 / per_call if per_call > 0 else math.nan:.0f} calls/s per core."
    )


def render_section(report: Report, command: str) -> str:
    """This run's section of docs/benchmarks.md, starting with its marker."""
    return "\n".join(
        [
            LOAD_MARKER,
            "## Load: replicas behind HAProxy",
            "",
            f"`{command}` on {report.date}, {report.budget} per row after a warm-up. {machine_line(report)}.",
            "",
            render_table(report),
            "",
            f"Each client is the MCP SDK's `Client` on 2026-07-28 calling `execute_code` with "
            f"`{SNIPPET.format(text='n')}` (a stdio child) and checking the answer is its own; p50 and p99 "
            "are nearest-rank over the successful calls, in the client. Replicas run with default sandbox "
            "settings (4 execution slots each) and per-caller caps raised to admit every client "
            "(without `auth` every client behind HAProxy is HAProxy's address). CPU (cores) is the CPU "
            "time each side used in the timed window over its length, from /proc: the clients (this "
            "Python process), the replicas with the processes they started (the child server), "
            f"HAProxy. All of them share this machine's {os.cpu_count()} cores, with whatever else runs "
            "on it (the load average above), so a second replica here adds no CPU: the 2-vs-1 ratio "
            "shows what balancing costs or gains on one machine, not what a second machine would add. "
            "Size by the replicas' CPU per call. See [replicas](replicas.md).",
            "",
        ]
    )


def write_section(path: Path, section: str) -> None:
    """Put `section` in `path`: in place of the previous load section, else before the soak's, else last."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if LOAD_MARKER in text:
        before, rest = text.split(LOAD_MARKER, 1)
        after = rest[rest.index(SOAK_MARKER) :] if SOAK_MARKER in rest else ""
    elif SOAK_MARKER in text:
        before, after = text.split(SOAK_MARKER, 1)
        after = SOAK_MARKER + after
    else:
        before, after = text, ""
    parts = [before.rstrip(), section.rstrip(), after.rstrip()]
    path.write_text("\n\n".join(part for part in parts if part) + "\n", encoding="utf-8")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients (default 16)")
    parser.add_argument("--seconds", type=float, default=15.0, help="timed calls per row (default 15 s)")
    parser.add_argument("--requests", type=int, default=0, help="a fixed count of calls per row instead")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per client first (default 2)")
    parser.add_argument("--write", type=Path, metavar="PATH", help="also put the table in this markdown file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table, and write it when asked."""
    args = parse_args(argv)
    print(f"load: {args.clients} clients; {os.cpu_count()} cores shared by every process", file=sys.stderr)
    report = anyio.run(measure, args.clients, args.seconds, args.requests, args.warmup)
    print(machine_line(report))
    print()
    print(render_table(report))
    destination: Path | None = args.write
    if destination is not None:
        write_section(destination, render_section(report, "make load"))
        print(f"\nwritten to {destination}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
