"""The runner: outputs, values, tracebacks, host services, limits and concurrency."""

from __future__ import annotations

import gc
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import pytest
import wasmtime

from gateway import Sandbox, SandboxLimits, ToolCallError
from gateway.catalog.docs import read_docs
from gateway.sandbox import MAX_DOCS_ARGS_BYTES, MAX_DOCS_QUERIES
from gateway.sandbox._instances import InstancePool
from gateway.sandbox._slots import POOL_MARGIN, Instance
from gateway.testing import InProcessTools
from tests.real_servers import snapshot_catalog

pytestmark = pytest.mark.anyio


async def run(sandbox: Sandbox, code: str, **kwargs: object):  # type: ignore[no-untyped-def]
    with anyio.fail_after(30):
        return await sandbox.execute(code, **kwargs)  # type: ignore[arg-type]


async def test_stdout_and_the_last_expression_value_are_returned(sandbox: Sandbox) -> None:
    result = await run(sandbox, "print('hello')\n{'a': [1, 2.5, None]}")
    assert result.ok
    assert result.stdout == "hello\n"
    assert result.value == {"a": [1, 2.5, None]}
    assert result.fuel > 0
    assert result.ms > 0


async def test_a_statement_last_line_gives_no_value(sandbox: Sandbox) -> None:
    result = await run(sandbox, "x = 1")
    assert result.ok
    assert result.value is None
    assert result.value_repr is None


async def test_a_value_that_is_not_json_comes_back_as_its_repr(sandbox: Sandbox) -> None:
    result = await run(sandbox, "{1, 2}")
    assert result.value == "{1, 2}"
    assert result.value_repr == "{1, 2}"


async def test_a_traceback_shows_the_snippets_own_lines_and_nothing_of_the_host(sandbox: Sandbox) -> None:
    result = await run(sandbox, "x = 1\n\ndef f():\n    return {}['missing']\n\nf()\n")
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "KeyError"
    tb = result.error.traceback or ""
    assert 'File "<snippet>", line 6, in <module>' in tb
    assert 'File "<snippet>", line 4, in f' in tb
    assert "return {}['missing']" in tb
    assert "guest" not in tb
    assert "gateway" not in tb


async def test_top_level_await_and_asyncio_gather_work(sandbox: Sandbox) -> None:
    tools = InProcessTools({"m.add": lambda a, b: a + b})
    code = (
        "import asyncio\n"
        "x = await tools.m.add(a=1, b=2)\n"
        "ys = await asyncio.gather(tools.m.add(a=x, b=1), asyncio.sleep(0, 5))\n"
        "[x, ys]"
    )
    result = await run(sandbox, code, tool_caller=tools)
    assert result.ok, result.error
    assert result.value == [3, [4, 5]]
    assert [call[0] for call in tools.calls] == ["m.add", "m.add"]
    assert [c.ok for c in result.tool_calls] == [True, True]


async def test_call_tool_passes_arguments_and_returns_the_result(sandbox: Sandbox) -> None:
    tools = InProcessTools({"srv.echo": lambda **kw: {"got": kw}})
    result = await run(sandbox, "call_tool('srv.echo', n=1, s='x')", tool_caller=tools)
    assert result.value == {"got": {"n": 1, "s": "x"}}
    assert tools.calls == [("srv.echo", {"n": 1, "s": "x"})]


async def test_a_failed_tool_call_is_a_catchable_tool_error_with_the_childs_message(sandbox: Sandbox) -> None:
    def refuse() -> None:
        raise ToolCallError("repository not found")

    tools = InProcessTools({"git.status": refuse})
    code = "try:\n    tools.git.status()\nexcept ToolError as e:\n    print('caught:', e)\n'after'"
    result = await run(sandbox, code, tool_caller=tools)
    assert result.ok
    assert result.stdout == "caught: repository not found\n"
    assert result.value == "after"
    assert result.tool_calls[0].ok is False


async def test_without_a_tool_caller_a_tool_call_says_no_tools_are_configured(sandbox: Sandbox) -> None:
    result = await run(sandbox, "tools.a.b()")
    assert result.error is not None
    assert result.error.type == "ToolError"
    assert "no child servers serve this sandbox" in result.error.message
    assert "--config" in result.error.message


async def test_the_clock_is_the_hosts(sandbox: Sandbox) -> None:
    before = time.time()
    result = await run(sandbox, "import time, datetime\n[time.time(), datetime.datetime.now().timestamp()]")
    after = time.time()
    assert result.ok, result.error
    # Read during the run, however long a busy machine made it (datetime keeps microseconds only).
    assert before <= result.value[0] <= after
    assert before - 1e-6 <= result.value[1] <= after


async def test_time_sleep_waits_on_the_host(sandbox: Sandbox) -> None:
    result = await run(sandbox, "import time\nt = time.monotonic()\ntime.sleep(0.05)\ntime.monotonic() - t")
    assert result.ok, result.error
    assert result.value >= 0.05  # a lower bound only: the host really waited


async def test_every_run_draws_fresh_randomness(sandbox: Sandbox) -> None:
    code = (
        "import random, os, uuid, secrets\n"
        "[random.random(), os.urandom(8).hex(), str(uuid.uuid4()),"
        " secrets.token_hex(8), random.Random().random()]"
    )
    first, second = await run(sandbox, code), await run(sandbox, code)
    assert first.ok, first.error
    assert second.ok, second.error
    for a, b in zip(first.value, second.value, strict=True):
        assert a != b


@pytest.mark.parametrize(
    "first_use",
    [
        "random.getstate()[1][1:4]",  # the state read before any draw
        "random._inst.random()",  # the shared generator reached past the module's functions
        "random.getrandbits(64)",
        "random.randbytes(8).hex()",
        "random.choice(range(10**9))",
        "[random.gauss(), random.random()]",
        "random.__dict__['random']()",
    ],
)
async def test_the_shared_generator_differs_between_runs_whichever_way_it_is_first_used(
    sandbox: Sandbox, first_use: str
) -> None:
    # It is seeded for each run at its first use, not at the run's start: no first use may see the
    # state the snapshot was built with.
    code = f"import random\n{first_use}"
    first, second = await run(sandbox, code), await run(sandbox, code)
    assert first.ok, first.error
    assert second.ok, second.error
    assert first.value != second.value


@pytest.mark.parametrize(
    "reach", ["random.Random.random(random._inst)", "_random.Random.getstate(random._inst)"]
)
async def test_no_generator_with_the_snapshots_state_exists_for_the_base_classes_methods_to_read(
    sandbox: Sandbox, reach: str
) -> None:
    result = await run(sandbox, f"import random, _random\n{reach}")
    assert result.error is not None
    assert result.error.type == "TypeError"


async def test_a_draw_taken_before_the_first_use_still_draws_afterwards_and_seeding_repeats(
    sandbox: Sandbox,
) -> None:
    code = (
        "import random\nfrom random import random as draw, seed\n"
        "a = [draw(), random.random(), draw()]\nseed(42)\nb = [draw(), random.random()]\n"
        "random.setstate(random.Random(7).getstate())\n[a, b, random.random()]"
    )
    result = await run(sandbox, code)
    assert result.ok, result.error
    drawn, seeded, restored = result.value
    assert len(set(drawn)) == 3
    expected = random.Random(42)
    assert seeded == [expected.random(), expected.random()]
    assert restored == random.Random(7).random()


async def test_tampering_with_builtins_does_not_survive_into_the_next_execution(sandbox: Sandbox) -> None:
    tampered = await run(
        sandbox, "import builtins, sys\nbuiltins.len = lambda x: 0\nsys.modules.clear()\nlen([1, 2])"
    )
    assert tampered.value == 0
    fresh = await run(sandbox, "len([1, 2])")
    assert fresh.value == 2


async def test_a_cpu_loop_past_the_wall_clock_budget_is_interrupted() -> None:
    limits = SandboxLimits(fuel=10**13, timeout_seconds=0.5, prewarm_instances=0)
    with Sandbox(limits) as sandbox:
        result = await run(sandbox, "while True: pass")
        assert result.error is not None
        assert result.error.type == "WallTimeExceeded"
        assert "0.5 s (sandbox.timeout_seconds)" in result.error.message
        assert (await run(sandbox, "1 + 1")).value == 2


async def test_the_fuel_error_names_the_configured_fuel() -> None:
    with Sandbox(SandboxLimits(fuel=50_000_000, prewarm_instances=0)) as sandbox:
        result = await run(sandbox, "while True: pass")
        assert result.error is not None
        assert result.error.type == "FuelExhausted"
        assert "50,000,000" in result.error.message
        assert result.fuel == 50_000_000


async def test_a_requested_timeout_is_capped_by_the_config(sandbox: Sandbox) -> None:
    assert sandbox.timeout_for(10**6) == sandbox.limits.timeout_seconds
    assert sandbox.timeout_for(2) == 2
    result = await run(sandbox, "import time; time.sleep(1)", timeout=0.5)
    assert result.error is not None
    assert result.error.type == "WallTimeExceeded"


async def test_a_bug_in_the_tool_caller_is_contained_without_a_host_traceback(sandbox: Sandbox) -> None:
    def broken() -> None:
        raise KeyError("internal detail")

    result = await run(
        sandbox,
        "try:\n    tools.x.broken()\nexcept BaseException:\n    pass",
        tool_caller=InProcessTools({"x.broken": broken}),
    )
    assert result.error is not None
    assert result.error.type == "GuestCrashed"
    assert "internal detail" not in result.error.message
    assert "Traceback" not in result.error.message
    assert (await run(sandbox, "2 * 3")).value == 6


async def test_two_executions_run_at_once_and_get_their_own_outputs(sandbox: Sandbox) -> None:
    both_inside = anyio.Event()
    arrived: list[str] = []

    async def rendezvous(who: str) -> str:
        arrived.append(who)
        if len(arrived) == 2:
            both_inside.set()
        await both_inside.wait()  # returns only if both executions are live at the same time
        return who.upper()

    tools = InProcessTools({"sync.meet": rendezvous})
    results: dict[str, object] = {}

    async def one(who: str) -> None:
        results[who] = await sandbox.execute(
            f"print('{who}')\ntools.sync.meet(who='{who}')", tool_caller=tools
        )

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "left")
            tg.start_soon(one, "right")
    for who in ("left", "right"):
        result = results[who]
        assert result.stdout == f"{who}\n"  # type: ignore[attr-defined]
        assert result.value == who.upper()  # type: ignore[attr-defined]


def test_execute_sync_runs_without_an_event_loop(sandbox: Sandbox) -> None:
    result = sandbox.execute_sync("sum(range(10))")
    assert result.value == 45


async def test_cancelling_the_caller_interrupts_a_running_snippet_and_frees_its_slot() -> None:
    limits = SandboxLimits(fuel=10**13, timeout_seconds=600, max_concurrent_executions=1, prewarm_instances=0)
    started = anyio.Event()
    tools = InProcessTools({"sync.started": started.set})
    with Sandbox(limits) as sandbox:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def spin() -> None:
                    await sandbox.execute("tools.sync.started()\nwhile True: pass", tool_caller=tools)

                tg.start_soon(spin)
                await started.wait()
                tg.cancel_scope.cancel()
            # One slot: this runs only if the spinning snippet really stopped.
            assert (await sandbox.execute("21 * 2")).value == 42


async def test_cancelling_the_caller_aborts_a_pending_tool_call() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)
    entered, aborted = anyio.Event(), anyio.Event()

    async def hang() -> None:
        entered.set()
        try:
            await anyio.Event().wait()
        finally:
            aborted.set()

    with Sandbox(limits) as sandbox:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tools = InProcessTools({"slow.hang": hang})
                tg.start_soon(lambda: sandbox.execute("tools.slow.hang()", tool_caller=tools))
                await entered.wait()
                tg.cancel_scope.cancel()
            await aborted.wait()
            assert (await sandbox.execute("'served'")).value == "served"


async def test_past_the_queue_a_request_gets_a_busy_error_naming_the_limits() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, max_queued_executions=0, prewarm_instances=0)
    inside, release = anyio.Event(), anyio.Event()

    async def hold() -> str:
        inside.set()
        await release.wait()
        return "held"

    with Sandbox(limits) as sandbox:
        results: list[str] = []
        busy = None
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def first() -> None:
                    result = await sandbox.execute(
                        "tools.q.hold()", tool_caller=InProcessTools({"q.hold": hold})
                    )
                    results.append(str(result.value))

                tg.start_soon(first)
                await inside.wait()
                busy = await sandbox.execute("1")
                release.set()
            assert busy is not None
            assert busy.error is not None
            assert busy.error.type == "GatewayBusy"
            assert "sandbox.max_concurrent_executions" in busy.error.message
            assert "sandbox.max_queued_executions" in busy.error.message
            assert results == ["held"]
            assert (await sandbox.execute("1")).value == 1


async def test_a_base_exception_from_the_tool_caller_cannot_crash_the_process(sandbox: Sandbox) -> None:
    class Escaping(BaseException):
        """Not an Exception: it would sail past `except Exception` into the ctypes callback."""

    def escape() -> None:
        raise Escaping()

    result = await run(sandbox, "tools.x.escape()", tool_caller=InProcessTools({"x.escape": escape}))
    assert result.error is not None
    assert result.error.type == "GuestCrashed"
    assert (await run(sandbox, "'alive'")).value == "alive"


@dataclass(frozen=True)
class _CatalogOnly:
    """Host services that answer questions about a catalog and serve no tool or resource."""

    docs: Callable[[str, dict[str, Any]], Any]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise ToolCallError(f"{name}: no tools here")

    async def admit(self, name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        raise ToolCallError(f"{name}: no tools here")

    async def read_resources(self, request: dict[str, Any]) -> Any:
        raise ToolCallError("no resources here")

    def read_docs(self, service: str, payload: dict[str, Any]) -> Any:
        return self.docs(service, payload)


def _docs_of_snapshot() -> _CatalogOnly:
    return _CatalogOnly(partial(read_docs, snapshot_catalog()))


async def test_a_snippet_finds_tools_with_search_and_reads_them_with_help_and_dir(sandbox: Sandbox) -> None:
    code = (
        "found = search('commit history', limit=2)\n"
        "print(found[0])\n"
        "help(tools.time.convert_time)\n"
        "[found[0].name, len(found), dir(tools), dir(tools.time)]"
    )
    result = await run(sandbox, code, services=_docs_of_snapshot())
    assert result.ok, result.error
    assert result.value == [
        "git.git_log",
        2,
        ["everything", "filesystem", "git", "memory", "time"],
        ["convert_time", "get_current_time"],  # dir() sorts
    ]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("git.git_log(*, repo_path: str")
    assert lines[1].startswith("time.convert_time(*, source_timezone: str")


async def test_help_on_plain_python_prints_its_docstring(sandbox: Sandbox) -> None:
    result = await run(sandbox, "help(len)\nhelp()", services=_docs_of_snapshot())
    assert result.stdout.startswith("len\n\nReturn the number of items in a container.")
    assert "search('what you need') finds tools" in result.stdout


async def test_a_bad_lookup_is_a_catchable_tool_error_with_what_to_do(sandbox: Sandbox) -> None:
    code = "try:\n    help(tools.time.convert)\nexcept ToolError as e:\n    message = str(e)\nmessage"
    result = await run(sandbox, code, services=_docs_of_snapshot())
    assert (
        result.value
        == "time has no tool 'convert'. Did you mean time.convert_time? dir(tools.time) lists them."
    )


async def test_lookups_per_execution_are_capped_and_the_cap_is_named(sandbox: Sandbox) -> None:
    code = (
        "n = 0\ntry:\n    while True:\n        dir(tools)\n        n += 1\n"
        "except ToolError as e:\n    message = str(e)\n[n, message]"
    )
    result = await run(sandbox, code, services=_docs_of_snapshot())
    assert result.value is not None
    assert result.value[0] == MAX_DOCS_QUERIES
    assert f"limited to {MAX_DOCS_QUERIES} per execution" in result.value[1]


async def test_an_oversized_search_is_refused_before_the_catalog_sees_it(sandbox: Sandbox) -> None:
    seen: list[str] = []

    def docs(service: str, payload: dict[str, Any]) -> Any:
        seen.append(service)
        return []

    words = MAX_DOCS_ARGS_BYTES // 5
    code = f"try:\n    search('word ' * {words})\nexcept ToolError as e:\n    message = str(e)\nmessage"
    result = await run(sandbox, code, services=_CatalogOnly(docs))
    assert f"over the {MAX_DOCS_ARGS_BYTES:,}-byte cap" in str(result.value)
    assert seen == []


async def test_without_a_catalog_search_says_there_is_none(sandbox: Sandbox) -> None:
    result = await run(sandbox, "search('anything')")
    assert result.error is not None
    assert "no catalog serves this sandbox" in result.error.message


def test_used_instances_the_prewarm_thread_has_not_freed_never_exhaust_the_engines_pool() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=1)
    with Sandbox(limits) as sandbox:
        pool = sandbox._slots[0]._instances
        stuck = threading.Event()
        make = pool._make

        def make_or_stick() -> Instance:
            if threading.current_thread().name == "codemode-prewarm":
                stuck.wait(30)  # the filler falls behind: it frees nothing while it is here
            return make()

        pool._make = make_or_stick
        pool.take()  # room in the pool: the filler starts a make, and sticks
        try:
            # Far more than the engine's pool holds (prewarm + POOL_MARGIN instances): each run
            # retires its instance, and only the inline fallback frees them.
            results = [sandbox.execute_sync("print(1)") for _ in range(3 * (1 + POOL_MARGIN))]
        finally:
            stuck.set()
    assert [result.stdout for result in results] == ["1\n"] * len(results), results[-1].summary()


async def echo_tool(name: str, args: dict[str, object]) -> object:
    return args


@pytest.mark.parametrize(
    ("code", "ended_by"),
    [
        ("tools.probe.echo(blob='a' * 300_000)", "ToolPayloadTooLarge"),  # the host ends the run
        ("while True:\n    pass", "WallTimeExceeded"),  # the watchdog traps it
        ("1 / 0", "ZeroDivisionError"),  # no trap at all
    ],
)
@pytest.mark.anyio
async def test_a_run_that_ends_in_a_trap_leaves_no_store_for_a_collection_to_free(
    code: str, ended_by: str
) -> None:
    # The trap's traceback used to hold the frame that ran it, and so the store, in a reference
    # cycle: its room in the engine's pool stayed taken until a collection.
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=1, timeout_seconds=0.3)
    with Sandbox(limits) as sandbox:
        pool = sandbox._slots[0]._instances
        gc.disable()
        try:
            for _ in range(3):
                result = await sandbox.execute(code, tool_caller=echo_tool)
                assert result.error is not None
                assert result.error.type == ended_by
            with anyio.fail_after(10):
                settled = await anyio.to_thread.run_sync(one_instance_left, pool)
            after = await sandbox.execute("print(1)")
        finally:
            gc.enable()
    assert settled, f"{pool._live} instances alive, 1 expected"
    assert after.stdout == "1\n", after.summary()


def one_instance_left(pool: InstancePool[Instance]) -> bool:
    """Whether the prewarm thread freed the used instances and refilled (within 5 s)."""
    with pool._changed:
        return pool._changed.wait_for(lambda: pool._live == 1 and bool(pool._ready), timeout=5)


FULL_ENGINE = "maximum concurrent limit of 6 for component instances reached"


def test_an_instantiation_into_a_full_engine_is_retried_while_another_thread_still_frees_a_store() -> None:
    # A collection on another thread counts a store in a reference cycle out before it deletes it:
    # for that moment the engine is full although the pool counts room.
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)
    with Sandbox(limits) as sandbox:
        slot = sandbox._slots[0]
        new_instance = slot._new_instance
        attempts: list[float] = []

        def full_three_times() -> Instance:
            attempts.append(time.monotonic())
            if len(attempts) <= 3:  # the first try, the try after the collection, one pause
                raise wasmtime.WasmtimeError(FULL_ENGINE)
            return new_instance()

        slot._new_instance = full_three_times
        store, _ = slot._instantiate()
    assert isinstance(store, wasmtime.Store)
    assert len(attempts) == 4


def test_an_engine_that_stays_full_fails_the_instantiation_after_the_pauses() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)
    with Sandbox(limits) as sandbox:
        slot = sandbox._slots[0]
        attempts: list[float] = []

        def always_full() -> Instance:
            attempts.append(time.monotonic())
            raise wasmtime.WasmtimeError(FULL_ENGINE)

        slot._new_instance = always_full
        with pytest.raises(wasmtime.WasmtimeError):
            slot._instantiate()
    assert len(attempts) == 6  # the first try, then one after the collection and after each pause
    assert attempts[-1] - attempts[0] >= 0.07


def test_a_prewarm_thread_that_falls_behind_never_instantiates_into_a_full_engine(
    sandbox_log: list[logging.LogRecord],
) -> None:
    # Back-to-back runs outpace the thread (freeing and making cost it ~3 ms a run of ~1 ms): it
    # used to try anyway, fail, log an error and pause for a second, while every run meanwhile
    # failed an instantiation and ran a garbage collection before it could start.
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=1)
    with Sandbox(limits) as sandbox:
        slot = sandbox._slots[0]
        pool = slot._instances
        make, new_instance = pool._make, slot._new_instance
        failed: list[str] = []

        def slow_make() -> Instance:
            if threading.current_thread().name == "codemode-prewarm":
                time.sleep(0.02)  # a thread descheduled on a busy machine
            return make()

        def counted_new_instance() -> Instance:
            try:
                return new_instance()
            except wasmtime.WasmtimeError as exc:
                failed.append(f"{threading.current_thread().name}: {exc}")
                raise

        pool._make = slow_make
        slot._new_instance = counted_new_instance
        results = [sandbox.execute_sync("print(1)") for _ in range(6 * (1 + POOL_MARGIN))]
    assert [result.stdout for result in results] == ["1\n"] * len(results), results[-1].summary()
    assert failed == []
    assert [r.getMessage() for r in sandbox_log if r.levelno >= logging.WARNING] == []


async def test_executions_one_after_another_reuse_one_slot_and_leave_the_others_unmade() -> None:
    with Sandbox(SandboxLimits(max_concurrent_executions=3, prewarm_instances=1)) as sandbox:
        for n in range(6):
            assert (await run(sandbox, f"print({n})")).stdout == f"{n}\n"
        live = [slot._instances._live for slot in sandbox._slots]
        engines = [slot.loaded for slot in sandbox._slots]
    # Only the first slot made instances, or even an engine: a caller at a time touches one engine's
    # code and memory.
    assert live[0] > 0
    assert live[1:] == [0, 0]
    assert engines == [True, False, False]


async def test_overlapping_executions_wake_a_second_slot_which_then_runs_them() -> None:
    gate = anyio.Event()
    arrived = 0

    async def parked(name: str, args: dict[str, object]) -> object:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            gate.set()
        await gate.wait()
        return args

    with Sandbox(SandboxLimits(max_concurrent_executions=2, prewarm_instances=1)) as sandbox:
        results: list[str] = []

        async def one(n: int) -> None:
            result = await run(sandbox, f"tools.probe.echo(n={n})\nprint({n})", tool_caller=parked)
            results.append(result.stdout)

        async with anyio.create_task_group() as both:
            both.start_soon(one, 1)
            both.start_soon(one, 2)
        live = [slot._instances._live for slot in sandbox._slots]
        engines = [slot.loaded for slot in sandbox._slots]
    assert sorted(results) == ["1\n", "2\n"]
    assert all(count > 0 for count in live)
    assert engines == [True, True]


async def test_the_used_instance_is_freed_after_the_result_is_handed_back_not_before() -> None:
    with Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=1)) as sandbox:
        pool = sandbox._slots[0]._instances
        told: list[int] = []
        replenish = pool.replenish

        def recording() -> None:
            told.append(len(pool._retired))
            replenish()

        pool.replenish = recording
        with anyio.fail_after(30):
            # The run takes the prewarmed instance: one still being made would wake the pool's thread
            # as it is added, and that thread would free the run's instance before any replenish.
            while not pool._ready:  # noqa: ASYNC110 (the pool's thread makes it)
                await anyio.sleep(0.001)
        result = await run(sandbox, "print(1)")
        at_return = list(told)  # no loop iteration since: the response is still to be written
        with anyio.fail_after(30):
            while not told or pool._retired:  # noqa: ASYNC110 (a timer, then the pool's thread)
                await anyio.sleep(0.001)
        after = await run(sandbox, "print(2)")
    assert (result.stdout, at_return, told[0], after.stdout) == ("1\n", [], 1, "2\n")
