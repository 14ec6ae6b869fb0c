"""The bench run in quick mode: every row is produced and carries a number. Targets are never asserted."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import anyio
import pytest
import run_bench
from mcp import types

from gateway import Sandbox
from gateway.catalog._semantic import semantic_installed
from gateway.config import load_config

EXPECTED_ROWS = [
    "fresh_paced",
    "fresh_sync",
    "fresh_async_paced",
    "fresh_async",
    "fresh_inline",
    "plain_wasi",
    "monty_fresh",
    "peer_fresh",
    "peer_reused",
    "cpu_fib",
    "cpu_json",
    "cpu_regex",
    "cpu_sort",
    "monty_fib",
    "tool_call",
    "journal",
    "parallel_calls",
    "throughput",
    "throughput_inline",
    "throughput_native",
    "memory_1",
    "memory_4",
    "memory_8",
    "gateway_execute",
    "sdk_floor",
    "gateway_execute_over_floors",
    "gateway_tool_time",
    "gateway_tool_everything",
    "gateway_throughput",
    "context_bytes",
    "context_ratio",
    "gateway_initialize",
    "gateway_first_search",
    "gateway_import",
    "sdk_import",
    "gateway_processes_per_child",
    "gateway_rss",
    "gateway_rss_further",
    "install_size",
    "codemode_execute",
    "codemode_nested",
    "codemode_rss",
    "search_top3_dev",
    "search_top5_dev",
    "search_top3_held-out",
    "search_top5_held-out",
    "search_top3_blind",
    "search_top5_blind",
    "search_p50",
]
# With the `semantic` extra installed, the re-rank's rows follow the lexical ones.
if semantic_installed():
    EXPECTED_ROWS += [
        "search_top3_dev_semantic",
        "search_top5_dev_semantic",
        "search_top3_held-out_semantic",
        "search_top5_held-out_semantic",
        "search_top3_blind_semantic",
        "search_top5_blind_semantic",
        "search_p50_semantic",
    ]
GATEWAY_CHILDREN = ["time", "git", "everything", "memory", "filesystem"]
WAIT_SECONDS = 120


@pytest.fixture(scope="module")
def quick_report() -> run_bench.Report:
    """One quick run of the whole bench, shared by the tests that read its output."""
    return anyio.run(run_bench.collect, run_bench.QUICK)


def table_cells(table: str) -> list[list[str]]:
    """The body rows of a markdown table, split into stripped cells."""
    lines = table.splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_quick_bench_produces_every_row_in_order(quick_report: run_bench.Report) -> None:
    assert [row.key for row in quick_report.rows] == EXPECTED_ROWS


def test_every_row_holds_a_finite_number(quick_report: run_bench.Report) -> None:
    assert all(math.isfinite(row.value) for row in quick_report.rows)


def test_rows_with_a_target_report_pass_or_miss_and_the_rest_report_info(
    quick_report: run_bench.Report,
) -> None:
    for row in quick_report.rows:
        assert row.status in (("PASS", "MISS") if row.target else ("info",))


def test_the_table_shows_a_numeric_value_for_every_row(quick_report: run_bench.Report) -> None:
    cells = table_cells(run_bench.render_table(quick_report.rows))

    assert [cell[0] for cell in cells] == [row.label for row in quick_report.rows]
    for cell, row in zip(cells, quick_report.rows, strict=True):
        assert cell[1].endswith(row.unit)
        assert math.isfinite(float(cell[1].removesuffix(row.unit)))


def test_the_document_names_the_machine_the_command_and_the_interpreters(
    quick_report: run_bench.Report,
) -> None:
    document = run_bench.render_document(quick_report, "python tests/bench/run_bench.py --write out.md")

    assert "`python tests/bench/run_bench.py --write out.md`" in document
    assert quick_report.machine.cpu in document
    assert f"{quick_report.machine.cores} cores" in document
    assert "CPython 3.14" in document
    assert f"wasmtime-py {quick_report.machine.wasmtime}" in document
    assert "Load average" in document
    assert run_bench.render_table(quick_report.rows) in document


def test_the_percentile_is_the_nearest_rank() -> None:
    samples = [float(n) for n in range(1, 201)]

    assert run_bench.percentile(samples, 50) == 100.0
    assert run_bench.percentile(samples, 99) == 198.0
    assert run_bench.percentile([7.0], 99) == 7.0


def test_a_target_can_bound_a_value_from_above_or_from_below() -> None:
    assert run_bench.Target(3.0).met(2.9)
    assert not run_bench.Target(3.0).met(3.1)
    assert run_bench.Target(20.0, at_least=True).met(21.0)
    assert not run_bench.Target(20.0, at_least=True).met(19.0)


@pytest.mark.anyio
async def test_tool_overhead_counts_every_call_of_the_snippet(sandbox: Sandbox) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        overhead = await run_bench.measure_tool_overhead(sandbox, calls=5, repeats=1)

    assert overhead.calls == 5
    assert math.isfinite(overhead.added_ms_per_call)


@pytest.mark.anyio
async def test_memory_is_sampled_while_every_execution_is_parked_in_the_gate(sandbox: Sandbox) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        memory = await run_bench.sample_live_rss(sandbox, live=3)

    assert memory.live == 3
    assert memory.live_bytes > 0
    assert math.isfinite(memory.per_execution_mib)


@pytest.mark.parametrize("workload", run_bench.WORKLOADS, ids=lambda workload: workload.key)
def test_a_workload_gives_the_same_answer_in_the_sandbox_and_natively(
    sandbox: Sandbox, workload: run_bench.Workload
) -> None:
    _, in_guest_ms, answer = run_bench.run_sandboxed(sandbox, workload)

    assert answer == run_bench.run_native(workload)[1]
    assert in_guest_ms > 0


def test_the_gateway_rows_name_what_they_compared(quick_report: run_bench.Report) -> None:
    rows = {row.key: row for row in quick_report.rows}

    for child in GATEWAY_CHILDREN:
        assert f"{child} " in rows["context_ratio"].detail
        assert f"{child} " in rows["gateway_initialize"].detail
    for key in ("gateway_tool_time", "gateway_tool_everything"):
        assert f"{run_bench.QUICK.gateway_tool_calls} direct SDK calls" in rows[key].detail
        assert "read by the gateway's line-capping stdio reader took" in rows[key].detail
        assert "with a host-import call (its row: " in rows[key].detail
        assert "the gateway's process spent " in rows[key].detail
        assert "on their own (over a pool answering at once" in rows[key].detail
    for key in ("throughput", "throughput_inline", "gateway_throughput"):
        assert " ms of CPU, so at most " in rows[key].detail
    assert rows["context_bytes"].value > 0
    assert rows["gateway_processes_per_child"].value == 1  # no process between the gateway and a child
    assert rows["context_ratio"].value > 0
    assert rows["gateway_import"].value > 0


def test_the_rows_that_may_miss_name_the_floors_measured_beside_them(
    quick_report: run_bench.Report,
) -> None:
    rows = {row.key: row for row in quick_report.rows}

    for workload in run_bench.WORKLOADS:
        assert "x native without the bound" in rows[f"cpu_{workload.key}"].detail
    assert "no cancel scope or per-call deadline" in rows["tool_call"].detail
    assert "no hop at all" in rows["tool_call"].detail
    assert "of which the component's `run` call p50" in rows["fresh_paced"].detail
    assert "an empty function's hop onto a worker thread" in rows["fresh_async_paced"].detail
    for key in ("fresh_sync", "fresh_async"):
        assert "ms of CPU per run, every thread: back to back" in rows[key].detail
    assert "2 native CPython processes against 1" in rows["gateway_throughput"].detail
    assert "a paced fresh `print(1)` in process p50" in rows["gateway_execute_over_floors"].detail
    assert "a minimal SDK server's call + a paced fresh run" in rows["codemode_execute"].detail
    assert "a direct SDK call of the child's tool" in rows["codemode_nested"].detail
    for key in ("codemode_execute", "codemode_nested"):
        assert "x at most" in rows[key].detail


def test_every_latency_row_is_a_row_of_the_full_table(quick_report: run_bench.Report) -> None:
    keys = [row.key for row in quick_report.rows]

    for prefix in run_bench.LATENCY_ROWS:
        assert any(key.startswith(prefix) for key in keys), prefix


def test_the_latency_run_takes_no_quick_or_write(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_bench.parse_args(["--latency"]).latency
    for other in (["--quick"], ["--write", "out.md"]):
        with pytest.raises(SystemExit):
            run_bench.parse_args(["--latency", *other])
    assert "no --quick or --write" in capsys.readouterr().err


def test_the_unmetered_floor_takes_off_only_what_the_body_saved() -> None:
    figures = run_bench.CpuFigures(
        run_bench.FIB, sandbox_ms=30, in_guest_ms=25, native_ms=10, repeats=1, unmetered_in_guest_ms=20
    )
    assert figures.ratio == 3.0
    assert figures.unmetered_ratio == 2.5


def test_the_bench_config_is_one_the_gateway_accepts(tmp_path: Path) -> None:
    servers = run_bench.child_servers(tmp_path)
    config = load_config(run_bench.write_gateway_config(tmp_path, servers), environ={})

    assert list(config.mcp_servers) == GATEWAY_CHILDREN
    assert [server.name for server in servers] == GATEWAY_CHILDREN


def test_a_child_tool_snippet_makes_exactly_the_calls_asked_for() -> None:
    calls: list[tuple[str, dict[str, str]]] = []

    class Server:
        def __getattr__(self, tool: str) -> object:
            return lambda **arguments: calls.append((tool, arguments))

    class Tools:
        def __getattr__(self, server: str) -> Server:
            assert server == run_bench.TIME_TOOL.server
            return Server()

    exec(run_bench.TIME_TOOL.snippet(3), {"tools": Tools()})

    assert calls == [("get_current_time", {"timezone": "UTC"})] * 3


def test_context_sizes_compare_the_children_together_with_the_gateway() -> None:
    context = run_bench.ContextSize(
        gateway_bytes=1000, gateway_tools=2, children={"a": (3000, 4), "b": (5000, 6)}
    )

    assert context.children_bytes == 8000
    assert context.ratio == 8.0
    assert run_bench.approx_tokens(8000) == 2000


def test_tools_are_sized_as_compact_json() -> None:
    tool = types.Tool(name="echo", input_schema={"type": "object"})

    assert run_bench.tools_json_bytes([tool]) == len(b'[{"name":"echo","inputSchema":{"type":"object"}}]')


@pytest.mark.anyio
async def test_the_bench_waits_for_the_processes_it_spawned_to_end() -> None:
    command = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # lives until its stdin closes
    async with await anyio.open_process(command) as process:
        assert process.pid in run_bench.descendants(os.getpid())
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(WAIT_SECONDS):
            await run_bench.wait_exited([process.pid])
            assert await process.wait() == 0


def test_the_install_size_counts_the_runtime_requirements_and_none_of_the_test_tools() -> None:
    sizes = run_bench.runtime_distributions()
    size, count = run_bench.runtime_install()
    assert count == len(sizes) + 1  # and the project
    assert size == sum(sizes.values()) + run_bench.COMPONENT_PATH.stat().st_size
    runtime = ("wasmtime", "mcp", "pydantic", "mcp-server-time", "componentize-py")
    assert all(sizes[name] > 0 for name in runtime)
    assert not {"pytest", "torch", "pyright", "transformers"} & sizes.keys()
