"""Tool calls side by side: asyncio in the snippet, calls in flight on the host, Python's semantics kept."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from wasmtime.component import Variant

from gateway import Sandbox, SandboxLimits, ToolCallError
from gateway.sandbox import _slots
from gateway.sandbox._host_call import host_call
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio


class Overlap:
    """Tools that take their time and count how many of them were in flight at once.

    With `meet`, each call first waits until that many were in flight at once: calls that really run
    side by side all get there however slowly a busy machine starts them; calls run one after another
    never do (the test's own timeout ends them).
    """

    def __init__(self, meet: int = 0) -> None:
        self.now = 0
        self.peak = 0
        self.cancelled = 0
        self.meet = meet
        self._met: anyio.Event | None = None

    async def slow(self, n: int, seconds: float = 0.2) -> int:
        self.now += 1
        self.peak = max(self.peak, self.now)
        met = self._met = self._met or anyio.Event()
        if self.peak >= self.meet:
            met.set()
        try:
            await met.wait()
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        finally:
            self.now -= 1
        if n < 0:
            raise ToolCallError(f"n={n} is negative")
        return n * 10

    def tools(self) -> InProcessTools:
        return InProcessTools({"s.slow": self.slow, "s.fast": lambda: "fast"})


async def run(sandbox: Sandbox, code: str, tools: InProcessTools) -> Any:
    with anyio.fail_after(30):
        return await sandbox.execute(code, tool_caller=tools, timeout=20)


async def test_gathered_calls_are_all_in_flight_at_once(sandbox: Sandbox) -> None:
    overlap = Overlap(meet=5)
    code = "import asyncio\nawait asyncio.gather(*[tools.s.slow(n=i) for i in range(5)])"
    result = await run(sandbox, code, overlap.tools())
    assert result.ok, result.error
    assert result.value == [0, 10, 20, 30, 40]  # in the order they were written
    assert overlap.peak == 5
    assert [call.ok for call in result.tool_calls] == [True] * 5


@pytest.mark.parametrize(
    "code",
    [
        "async with asyncio.TaskGroup() as tg:\n"
        "    ts = [tg.create_task(tools.s.slow(n=i)) for i in range(3)]\n"
        "[t.result() for t in ts]",
        "ts = [asyncio.create_task(tools.s.slow(n=i)) for i in range(3)]\n[await t for t in ts]",
        "done, _ = await asyncio.wait([tools.s.slow(n=i) for i in range(3)])\n"
        "sorted(t.result() for t in done)",
        "sorted([await f for f in asyncio.as_completed([tools.s.slow(n=i) for i in range(3)])])",
        "async def main():\n    return await asyncio.gather(*(call_tool('s.slow', n=i) for i in range(3)))\n"
        "asyncio.run(main())",
        # Python folds these letters into `create_task`: no ASCII name to find in the source, and no
        # `await` either, yet the calls must still be deferred.
        "async with asyncio.TaskGroup() as tg:\n"
        "    ts = [tg.\uff43\uff52\uff45\uff41\uff54\uff45_task(tools.s.slow(n=i)) for i in range(3)]\n"
        "[t.result() for t in ts]",
    ],
    ids=[
        "task-group",
        "create-task",
        "wait",
        "as-completed",
        "asyncio-run-and-call-tool",
        "create-task-in-fullwidth-letters",
    ],
)
async def test_every_asyncio_way_of_running_calls_together_overlaps_them(sandbox: Sandbox, code: str) -> None:
    overlap = Overlap(meet=3)
    result = await run(sandbox, "import asyncio\n" + code, overlap.tools())
    assert result.ok, result.error
    assert result.value == [0, 10, 20]
    assert overlap.peak == 3


async def test_return_exceptions_puts_each_failure_in_its_place(sandbox: Sandbox) -> None:
    code = (
        "import asyncio\n"
        "r = await asyncio.gather(\n"
        "    tools.s.slow(n=1), tools.s.slow(n=-1), tools.s.slow(n=2), return_exceptions=True\n)\n"
        "[x if isinstance(x, int) else f'{type(x).__name__}: {x}' for x in r]"
    )
    result = await run(sandbox, code, Overlap().tools())
    assert result.value == [10, "ToolError: n=-1 is negative", 20]


async def test_a_failing_sibling_cancels_nothing_and_its_error_reaches_the_awaiter(
    sandbox: Sandbox,
) -> None:
    overlap = Overlap()
    code = (
        "import asyncio\n"
        "t = asyncio.create_task(tools.s.slow(n=3, seconds=0.4))\n"
        "try:\n    await asyncio.gather(tools.s.slow(n=-1), t)\n"
        "except ToolError as e:\n    print('caught', e)\n"
        "await t"
    )
    result = await run(sandbox, code, overlap.tools())
    assert result.ok, result.error
    assert result.stdout == "caught n=-1 is negative\n"
    assert result.value == 30
    assert overlap.cancelled == 0


async def test_a_task_group_cancels_the_calls_still_in_flight_when_one_fails(sandbox: Sandbox) -> None:
    overlap = Overlap()
    code = (
        "import asyncio\n"
        "try:\n    async with asyncio.TaskGroup() as tg:\n"
        "        tg.create_task(tools.s.slow(n=1, seconds=30))\n        tg.create_task(tools.s.slow(n=-1))\n"
        "except* ToolError as group:\n    print(len(group.exceptions), 'failed')"
    )
    result = await run(sandbox, code, overlap.tools())
    assert result.ok, result.error
    assert result.stdout == "1 failed\n"
    assert overlap.cancelled == 1
    assert sorted(str(call.error) for call in result.tool_calls) == ["ToolError", "cancelled"]


async def test_a_wait_for_timeout_cancels_the_call_on_the_host(sandbox: Sandbox) -> None:
    overlap = Overlap()
    code = (
        "import asyncio\n"
        "try:\n    await asyncio.wait_for(tools.s.slow(n=1, seconds=30), timeout=0.1)\n"
        "except TimeoutError:\n    outcome = 'timed out'\noutcome"
    )
    result = await run(sandbox, code, overlap.tools())
    assert result.value == "timed out"
    assert overlap.cancelled == 1


async def test_calls_left_running_when_the_snippet_ends_are_cancelled(sandbox: Sandbox) -> None:
    overlap = Overlap()
    code = (
        "import asyncio\nasyncio.create_task(tools.s.slow(n=1, seconds=30))\n"
        "await asyncio.sleep(0.05)\n'done'"
    )
    result = await run(sandbox, code, overlap.tools())
    assert result.value == "done"
    assert overlap.cancelled == 1
    assert result.tool_calls[0].error == "cancelled"


async def test_a_blocking_call_inside_a_coroutine_still_returns_its_value(sandbox: Sandbox) -> None:
    code = "import asyncio\nasync def f():\n    x = tools.s.slow(n=2)\n    return x + 1\nawait f()"
    result = await run(sandbox, code, Overlap().tools())
    assert result.value == 21


async def test_an_awaited_call_to_an_unknown_tool_raises_where_it_is_awaited(sandbox: Sandbox) -> None:
    code = "try:\n    await call_tool('s.' + 'nope')\nexcept ToolError as e:\n    message = str(e)\nmessage"
    result = await run(sandbox, code, Overlap().tools())
    assert result.value is not None
    assert "unknown tool 's.nope'" in result.value


async def test_a_call_past_the_per_call_timeout_is_a_tool_error_while_siblings_finish(
    sandbox: Sandbox,
) -> None:
    limits = sandbox.limits.model_copy(update={"tool_call_timeout_seconds": 0.3})
    with Sandbox(limits) as short:
        code = (
            "import asyncio\n"
            "r = await asyncio.gather(tools.s.slow(n=1, seconds=5), tools.s.slow(n=2, seconds=0.05), "
            "return_exceptions=True)\n[str(x) for x in r]"
        )
        result = await run(short, code, Overlap().tools())
    assert result.value == ["s.slow timed out after 0.3 s (sandbox.tool_call_timeout_seconds)", "20"]


async def test_waiting_forever_on_nothing_is_an_error_not_a_hang(sandbox: Sandbox) -> None:
    result = await run(sandbox, "import asyncio\nawait asyncio.Event().wait()", Overlap().tools())
    assert result.error is not None
    assert result.error.type == "RuntimeError"
    assert "nothing can wake them" in result.error.message


async def test_asyncio_sleep_waits_on_the_host_within_the_budget(sandbox: Sandbox) -> None:
    result = await run(
        sandbox,
        "import asyncio, time\nt = time.monotonic()\nawait asyncio.sleep(0.2)\ntime.monotonic() - t >= 0.2",
        Overlap().tools(),
    )
    assert result.value is True
    past = await sandbox.execute("import asyncio\nawait asyncio.sleep(60)", timeout=1)
    assert past.error is not None
    assert past.error.type == "WallTimeExceeded"


async def test_an_asyncio_sleep_is_one_wait_on_the_host_not_a_loop_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def counting(store: object, name: str, args_json: str) -> Variant:
        calls.append(name)
        return host_call(store, name, args_json)

    monkeypatch.setattr(_slots, "host_call", counting)
    with Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=0)) as own:
        monkeypatch.undo()
        with anyio.fail_after(30):
            result = await own.execute("import asyncio\nawait asyncio.sleep(0.3)\n'slept'")
    assert result.value == "slept"
    assert calls.count("@wait") <= 3, calls.count("@wait")


async def test_asyncio_run_inside_a_snippet_that_awaits_says_to_await_instead(sandbox: Sandbox) -> None:
    code = "import asyncio\nasync def main():\n    return 1\nawait asyncio.sleep(0)\nasyncio.run(main())"
    result = await run(sandbox, code, Overlap().tools())
    assert result.error is not None
    assert result.error.type == "RuntimeError"
    assert "write `await main()` instead of `asyncio.run(main())`" in result.error.message
