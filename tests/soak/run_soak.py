"""`make soak`: thousands of mixed executions through the real stdio gateway, at concurrency.

Every snippet carries its own request number and every kind of outcome proves it came back to the
right caller, so a lost, duplicated or crossed response is counted, not guessed. Prints p50/p99,
throughput and the gateway's RSS after warm-up and at the end; `--write` adds them to
docs/benchmarks.md. Exits 1 if any response was lost, duplicated or mismatched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

KINDS = ("plain", "tool", "failing", "memory-limit", "fuel-limit")
SOAK_MARKER = "<!-- soak -->"


def snippet(kind: str, n: int) -> str:
    """The snippet for request `n`; each kind's outcome carries `n` back."""
    return {
        "plain": f"sum(range({n % 100})) * 0 + {n}",
        "tool": f"now = tools.time.get_current_time(timezone='UTC')\n[{n}, now['timezone']]",
        "failing": f"raise ValueError('request {n}')",
        "memory-limit": f"# request {n}\nbytearray(2**30)",
        "fuel-limit": f"# request {n}\nwhile True:\n    pass",
    }[kind]


def matches(kind: str, n: int, outcome: dict[str, Any]) -> bool:
    """Whether `outcome` is the answer to request `n` of this kind."""
    error = outcome.get("error") or {}
    if kind == "plain":
        return outcome.get("value") == n
    if kind == "tool":
        return outcome.get("value") == [n, "UTC"]
    if kind == "failing":
        return error.get("type") == "ValueError" and error.get("message") == f"request {n}"
    if kind == "memory-limit":
        return error.get("type") == "MemoryLimitExceeded"
    return error.get("type") == "FuelExhausted"


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list[float])
    answered: dict[int, int] = field(default_factory=dict[int, int])
    mismatched: list[int] = field(default_factory=list[int])
    failed: list[str] = field(default_factory=list[str])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _gateway_pid(config: Path) -> int:
    """The gateway process the SDK client spawned: the one whose command line names our config."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in cmdline and str(config).encode() in cmdline:
                return int(proc.name)
    raise RuntimeError("gateway process not found")


def _config(directory: Path) -> Path:
    config = {
        "mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}},
        # Small fuel: the limit-hitting snippets end in tens of milliseconds.
        "sandbox": {"fuel": 300_000_000, "max_concurrent_executions": 4, "max_queued_executions": 64},
    }
    path = directory / "soak-gateway.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


async def _one(session: ClientSession, n: int, tally: Tally) -> None:
    kind = KINDS[n % len(KINDS)]
    started = time.perf_counter()
    try:
        with anyio.fail_after(120):
            result = await session.call_tool("execute_code", {"code": snippet(kind, n), "details": True})
    except Exception as exc:
        tally.failed.append(f"{n}: {type(exc).__name__}: {exc}")
        return
    tally.latencies_ms.append((time.perf_counter() - started) * 1000)
    tally.answered[n] = tally.answered.get(n, 0) + 1
    outcome = result.structured_content
    if not isinstance(outcome, dict) or not matches(kind, n, outcome):
        tally.mismatched.append(n)


async def _batch(session: ClientSession, numbers: range, concurrency: int, tally: Tally) -> None:
    limiter = anyio.CapacityLimiter(concurrency)

    async def run(n: int) -> None:
        async with limiter:
            await _one(session, n, tally)

    async with anyio.create_task_group() as tg:
        for n in numbers:
            tg.start_soon(run, n)


@dataclass
class SoakReport:
    executions: int
    concurrency: int
    seconds: float
    p50_ms: float
    p99_ms: float
    rss_warm_mib: float
    rss_end_mib: float
    lost: int
    duplicated: int
    mismatched: int

    @property
    def growth(self) -> float:
        return self.rss_end_mib / self.rss_warm_mib - 1

    @property
    def intact(self) -> bool:
        return self.lost + self.duplicated + self.mismatched == 0

    def table(self) -> str:
        growth = "PASS" if self.growth <= 0.10 else "MISS"
        rss = f"{self.rss_warm_mib:.0f} MiB → {self.rss_end_mib:.0f} MiB ({self.growth:+.1%})"
        responses = f"{self.lost} / {self.duplicated} / {self.mismatched}"
        mix = "plain, tool-calling, failing, memory- and fuel-limited"
        rows = [
            ("executions", f"{self.executions} ({mix}) at concurrency {self.concurrency}", "—", "info"),
            ("latency p50 / p99", f"{self.p50_ms:.1f} ms / {self.p99_ms:.1f} ms", "—", "info"),
            ("throughput", f"{self.executions / self.seconds:.0f} executions/s", "—", "info"),
            ("gateway RSS after warm-up → end", rss, "≤ +10%", growth),
            (
                "lost / duplicated / mismatched responses",
                responses,
                "0 / 0 / 0",
                "PASS" if self.intact else "FAIL",
            ),
        ]
        lines = ["| Measurement | Value | Target | Status |", "|---|---|---|---|"]
        return "\n".join(lines + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows])


async def soak(executions: int, concurrency: int, warmup: int) -> SoakReport:
    """Run the soak against a fresh gateway process and report on it."""
    with tempfile.TemporaryDirectory(prefix="codemode-soak-") as tmp:
        config = _config(Path(tmp))
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)]
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
            pid = _gateway_pid(config)
            tally = Tally()
            await _batch(session, range(warmup), concurrency, tally)
            rss_warm = _rss_mib(pid)
            tally = Tally()
            started = time.perf_counter()
            await _batch(session, range(warmup, warmup + executions), concurrency, tally)
            seconds = time.perf_counter() - started
            rss_end = _rss_mib(pid)
    expected = set(range(warmup, warmup + executions))
    latencies = sorted(tally.latencies_ms)
    return SoakReport(
        executions=executions,
        concurrency=concurrency,
        seconds=seconds,
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        rss_warm_mib=rss_warm,
        rss_end_mib=rss_end,
        lost=len(expected - set(tally.answered)) + len(tally.failed),
        duplicated=sum(count - 1 for count in tally.answered.values() if count > 1),
        mismatched=len(tally.mismatched),
    )


def _write(report: SoakReport, path: Path, command: str) -> None:
    section = (
        f"{SOAK_MARKER}\n## Soak\n\n`{command}` on {time.strftime('%Y-%m-%d')}, "
        f"load average {os.getloadavg()[0]:.2f} at the end:\n\n{report.table()}\n"
    )
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    text = text.split(SOAK_MARKER)[0].rstrip() + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description="Soak the gateway with mixed executions at concurrency.")
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--write", type=Path, help="add the table to this markdown file")
    args = parser.parse_args()
    report = anyio.run(soak, args.executions, args.concurrency, args.warmup)
    print(report.table())
    if args.write:
        _write(report, args.write, "make soak")
    sys.exit(0 if report.intact else 1)


if __name__ == "__main__":
    main()
