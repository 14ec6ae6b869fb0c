"""Tool calls side by side: asyncio over tool calls, and attempts to turn that against the limits.

A snippet's `asyncio.gather`, `create_task`, `TaskGroup`, `wait` and `as_completed` run tool calls
side by side on the host, through the one import (`@start`, `@wait`, `@cancel`). These cases check
that every limit holds for calls in flight exactly as for calls made one at a time: the call count,
quotas counted exactly under a race, each approval asked once and never carried to another call, a
sibling in flight when a run pauses made once, the per-child cap on calls in flight, the wall-clock
budget while waiting, and cancellation; and that forged waits and the loop's other ways out (threads,
subprocesses, servers) are refused.
"""

from __future__ import annotations

from gateway.escape.cases._model import (
    HOST_IMPORT,
    EscapeCase,
    Seen,
    SeenCheck,
    case_maker,
    limit,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
    within_budget,
    wrote_nothing,
)
from gateway.escape.cases._probe import PROBE_MAX_CONCURRENT_CALLS, QUOTA, TOOL_QUOTA
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("concurrency")
_gateway_case = case_maker("concurrency", "gateway")
_ASYNCIO = "import asyncio\n"
_REFUSED = refused("Err")
_PAST_BUDGET = limit("WallTimeExceeded", check=within_budget, what="ended within the budget")
_SLOW = 0.4  # seconds: a call still in flight when its sibling fails


def _side_by_side(calls: int) -> str:
    """`calls` calls that each answer only once all of them are in flight at once."""
    return _ASYNCIO + f"await asyncio.gather(*[tools.probe.meet(count={calls}) for _ in range({calls})])"


def _one_over_the_call_limit(limits: SandboxLimits) -> str:
    calls = limits.max_tool_calls + 1
    return _ASYNCIO + f"await asyncio.gather(*[tools.probe.echo(n=i) for i in range({calls})])"


def _race(call: str, times: int) -> str:
    """`times` copies of `call` side by side; the value is [successes, the kinds of the refusals]."""
    return (
        _ASYNCIO
        + f"r = await asyncio.gather(*[{call} for _ in range({times})], return_exceptions=True)\n"
        + "[sum(not isinstance(x, Exception) for x in r), "
        + "sorted({x.kind for x in r if isinstance(x, ToolError)})]"
    )


def _cancelled_after(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    """The slow sibling was cancelled (a call waited for would have ended by its timeout instead)."""
    return any(call.error == "cancelled" for call in result.tool_calls)


def _prompts_and_notes(count: int, name: str) -> SeenCheck:
    """`count` prompts, one per call, and the probe got each call's own text once."""

    def check(seen: Seen) -> str | None:
        if len(seen.prompts) != count:
            return f"expected {count} approval prompts, saw {len(seen.prompts)}"
        written = sorted(seen.notes.get(name, ()))
        if written != [str(i) for i in range(count)]:
            return f"expected each of the {count} notes once, the probe got {dict(seen.notes)}"
        return None

    return check


def _once_more(first: ExecutionResult, second: ExecutionResult) -> bool:
    """The call in flight when the run paused reached the probe once: the next one is the second."""
    return first.value == 1 and second.value == 2


CASES: tuple[EscapeCase, ...] = (
    _case(
        "conc-gather-side-by-side",
        _side_by_side(5),
        value_is([5] * 5),
        needs=needs_tool_calls(5),
    ),
    _case(
        "conc-return-exceptions-in-place",
        _ASYNCIO
        + "r = await asyncio.gather(tools.probe.echo(n=1), tools.probe.fail(), tools.probe.echo(n=2), "
        + "return_exceptions=True)\n[type(x).__name__ for x in r]",
        value_is(["dict", "ToolError", "dict"]),
        needs=needs_tool_calls(3),
    ),
    _case(
        "conc-failing-sibling-cancels-nothing",
        _ASYNCIO
        + f"t = asyncio.create_task(tools.probe.slow(seconds={_SLOW}))\n"
        + "try:\n    await asyncio.gather(tools.probe.fail(), t)\nexcept ToolError:\n    pass\nawait t",
        value_is("done"),
        needs=needs_tool_calls(2),
    ),
    _case(
        "conc-taskgroup-cancels-the-rest",
        _ASYNCIO
        + "try:\n    async with asyncio.TaskGroup() as tg:\n"
        + "        tg.create_task(tools.probe.slow(seconds=60))\n        tg.create_task(tools.probe.fail())\n"
        + "except* ToolError:\n    pass",
        succeeds(_cancelled_after, "the slow call was cancelled at once"),
        needs=needs_tool_calls(2),
    ),
    _case("conc-one-over-the-call-limit", _one_over_the_call_limit, limit("ToolCallLimitExceeded")),
    _case(
        "conc-waiting-past-the-budget",
        _ASYNCIO
        + "for _ in range(10):\n"
        + "    await asyncio.gather(tools.probe.slow(seconds=0.7), tools.probe.slow(seconds=0.7))",
        _PAST_BUDGET,
        needs=needs_tool_calls(4),
    ),
    _case("conc-sleep-past-the-budget", _ASYNCIO + "await asyncio.sleep(3600)", _PAST_BUDGET),
    _case(
        "conc-timer-past-the-budget-beside-a-call",
        _ASYNCIO + "await asyncio.gather(asyncio.sleep(3600), tools.probe.slow(seconds=0.1))",
        _PAST_BUDGET,
        needs=needs_tool_calls(1),
    ),
    _case(
        "conc-await-what-never-comes",
        _ASYNCIO + "await asyncio.Event().wait()",
        refused("RuntimeError", "nothing can wake them"),
    ),
    _case(
        "conc-task-left-running-when-the-run-ends",
        _ASYNCIO + "asyncio.create_task(tools.probe.slow(seconds=60))\nawait asyncio.sleep(0)\n'left'",
        succeeds(_cancelled_after, "the call left running was cancelled when the run ended"),
        needs=needs_tool_calls(1),
    ),
    # Forged waits and starts, straight through the import.
    _case(
        "conc-forged-wait-forever",
        HOST_IMPORT + "host.call('@wait', '{\"ids\": [], \"timeout\": null}')",
        _REFUSED,
    ),
    _case(
        "conc-forged-wait-on-nothing-started",
        HOST_IMPORT + "host.call('@wait', '{\"ids\": [123456], \"timeout\": null}')",
        _REFUSED,
    ),
    _case(
        "conc-forged-wait-ids-not-numbers", HOST_IMPORT + "host.call('@wait', '{\"ids\": [\"a\"]}')", _REFUSED
    ),
    _case(
        "conc-forged-wait-huge-id-list",
        HOST_IMPORT + "import json\nhost.call('@wait', json.dumps({'ids': list(range(20000))}))",
        _REFUSED,
    ),
    _case(
        "conc-forged-wait-negative-timeout",
        HOST_IMPORT + "host.call('@wait', '{\"ids\": [], \"timeout\": -1}')",
        _REFUSED,
    ),
    _case(
        "conc-forged-wait-past-the-budget",
        HOST_IMPORT + "host.call('@wait', '{\"ids\": [], \"timeout\": 3600}')",
        _PAST_BUDGET,
    ),
    _case(
        "conc-forged-start-of-a-host-service",
        HOST_IMPORT + 'host.call(\'@start\', \'{"name": "@docs", "arguments": {}}\')',
        refused("Err", "unknown host service"),
    ),
    _case(
        "conc-forged-start-without-a-name",
        HOST_IMPORT + "host.call('@start', '{\"arguments\": {}}')",
        refused("Err", "needs a name"),
    ),
    _case(
        "conc-forged-start-arguments-not-an-object",
        HOST_IMPORT + 'host.call(\'@start\', \'{"name": "probe.echo", "arguments": [1]}\')',
        refused("Err", "must be a JSON object"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "conc-forged-start-arguments-over-the-cap",
        lambda limits: (
            HOST_IMPORT
            + "import json\nhost.call('@start', json.dumps({'name': 'probe.echo', "
            + f"'arguments': {{'a': 'x' * {limits.max_tool_args_bytes + 1}}}}}))"
        ),
        limit("ToolPayloadTooLarge"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "conc-forged-cancel-of-nothing",
        HOST_IMPORT + "host.call('@cancel', '{\"ids\": [1, 2, 3]}')\n'ok'",
        value_is("ok"),
    ),
    # The loop's other ways out.
    _case(
        "conc-executor-thread",
        _ASYNCIO + "await asyncio.get_running_loop().run_in_executor(None, print, 1)",
        refused("ModuleNotFoundError"),
    ),
    _case("conc-to-thread", _ASYNCIO + "await asyncio.to_thread(print, 1)", refused("ModuleNotFoundError")),
    _case(
        "conc-start-server",
        _ASYNCIO + "await asyncio.start_server(lambda r, w: None, '127.0.0.1', 8765)",
        refused("OSError"),
    ),
    _case(
        "conc-call-soon-threadsafe",
        _ASYNCIO + "asyncio.get_running_loop().call_soon_threadsafe(print, 1)\nawait asyncio.sleep(0)",
        refused("NotImplementedError"),
    ),
    # Through a whole gateway: the policy's limits under a race.
    _gateway_case(
        "conc-child-cap-on-calls-in-flight",
        _ASYNCIO
        + "r = await asyncio.gather(*[tools.probe.overlap(seconds=0.1, "
        + f"meet={PROBE_MAX_CONCURRENT_CALLS}) for _ in range(6)])\n"
        + "max(x['result'] for x in r)",
        value_is(PROBE_MAX_CONCURRENT_CALLS),
        needs=needs_tool_calls(6),
    ),
    _gateway_case(
        "conc-quota-race",
        _race("tools.probe.echo(text='x')", QUOTA + 5),
        value_is([QUOTA, ["QuotaExceeded"]]),
        needs=needs_tool_calls(QUOTA + 5),
    ),
    _gateway_case(
        "conc-tool-quota-race",
        _race("tools.probe.read_note(name='beta')", TOOL_QUOTA + 3),
        value_is([TOOL_QUOTA, ["QuotaExceeded"]]),
        needs=needs_tool_calls(TOOL_QUOTA + 3),
    ),
    _gateway_case(
        "conc-approval-race-each-call-asked",
        _ASYNCIO
        + "await asyncio.gather(*[tools.probe.write_note(name='race', text=str(i)) for i in range(3)])\n'ok'",
        value_is("ok"),
        sees=_prompts_and_notes(3, "race"),
        approve=True,
        needs=needs_tool_calls(3),
    ),
    _gateway_case(
        "conc-approval-race-declined",
        _race("tools.probe.write_note(name='race-declined', text='x')", 3),
        value_is([0, ["PolicyDenied"]]),
        sees=wrote_nothing,
        needs=needs_tool_calls(3),
    ),
    _gateway_case(
        "conc-sibling-in-flight-at-a-pause-runs-once",
        _ASYNCIO
        + "a, _ = await asyncio.gather(tools.probe.tick(name='conc-once'), "
        + "tools.probe.write_note(name='once', text='x'))\na['result']",
        value_is(1),
        then="tools.probe.tick(name='conc-once')['result']",
        then_check=_once_more,
        approve=True,
        needs=needs_tool_calls(3),
    ),
)
