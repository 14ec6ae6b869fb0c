"""The host import on a worker thread: tool calls, their caps and timeouts, host services, cancellation."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import anyio.to_thread
import pytest
import wasmtime
from anyio.abc import TaskStatus
from wasmtime.component import Variant

from gateway.errors import (
    ExecutionCancelled,
    GuestCrashed,
    PolicyDenied,
    ShownTooLarge,
    ToolCallError,
    ToolCallLimitExceeded,
    ToolPayloadTooLarge,
    WallTimeExceeded,
)
from gateway.sandbox import ToolCaller
from gateway.sandbox import _host_call as host_call_module
from gateway.sandbox._hop import asyncio_loop
from gateway.sandbox._host_call import ExecutionState, bound_to_thread, host_call
from gateway.sandbox._services import ToolsOnly
from gateway.sandbox.limits import SandboxLimits
from gateway.shared import Shares
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    return a + b


async def hang() -> None:
    await anyio.sleep_forever()


def run(
    limits: SandboxLimits | None = None,
    tools: ToolCaller | None = None,
    timeout: float = 30,
    *,
    fast_hop: bool = True,
) -> ExecutionState:
    """An execution as `Sandbox.execute` makes one: it hops back to this loop with `call_on_loop`
    (`fast_hop=False`: through `anyio.from_thread.run`, as under a backend other than asyncio)."""
    execution = ExecutionState(limits or SandboxLimits(), timeout, ToolsOnly(tools) if tools else None)
    execution.loop = asyncio_loop() if fast_hop else None
    return execution


async def call(execution: ExecutionState, name: str, args_json: str = "{}") -> Variant | None:
    """What the guest gets back from one host call; None when the host trapped it."""

    def on_worker() -> Variant | None:
        with bound_to_thread(execution):
            try:
                return host_call(None, name, args_json)
            except wasmtime.WasmtimeError:
                return None

    with anyio.fail_after(10):
        return await anyio.to_thread.run_sync(on_worker, abandon_on_cancel=True)


def payload(variant: Variant | None, tag: str) -> str:
    assert variant is not None
    assert variant.tag == tag, variant
    assert isinstance(variant.payload, str)
    return variant.payload


def refusal(variant: Variant | None) -> dict[str, Any]:
    return json.loads(payload(variant, "err"))


async def test_a_tool_call_returns_its_json_result_and_is_recorded() -> None:
    tools = InProcessTools({"m.add": add})
    execution = run(tools=tools)
    assert await call(execution, "m.add", '{"a": 1, "b": 2}') == Variant("ok", "3")
    assert tools.calls == [("m.add", {"a": 1, "b": 2})]
    [record] = execution.tool_calls
    assert (record.tool, record.ok, record.error) == ("m.add", True, None)
    assert execution.ended_by is None


@pytest.mark.parametrize("fast_hop", [True, False], ids=["call_on_loop", "anyio.from_thread"])
async def test_both_hops_serve_calls_time_them_out_and_carry_refusals(fast_hop: bool) -> None:
    async def slow() -> None:
        await anyio.sleep(5)

    async def refuse() -> None:
        raise PolicyDenied("not this one", rule="policy.deny")

    tools = InProcessTools({"m.add": add, "m.slow": slow, "m.refuse": refuse})
    execution = run(SandboxLimits(tool_call_timeout_seconds=0.05), tools, fast_hop=fast_hop)
    assert await call(execution, "m.add", '{"a": 2, "b": 3}') == Variant("ok", "5")
    assert "timed out after 0.05 s" in refusal(await call(execution, "m.slow"))["message"]
    assert refusal(await call(execution, "m.refuse")) == {"type": "PolicyDenied", "message": "not this one"}
    assert [(r.tool, r.ok, r.error) for r in execution.tool_calls] == [
        ("m.add", True, None),
        ("m.slow", False, "timeout"),
        ("m.refuse", False, "PolicyDenied"),
    ]
    assert execution.ended_by is None


async def test_a_call_past_the_tool_call_limit_ends_the_execution_without_reaching_the_tool() -> None:
    tools = InProcessTools({"m.add": add})
    execution = run(SandboxLimits(max_tool_calls=1), tools)
    assert await call(execution, "m.add", '{"a": 1, "b": 2}') is not None
    assert await call(execution, "m.add", '{"a": 1, "b": 2}') is None
    assert isinstance(execution.ended_by, ToolCallLimitExceeded)
    assert "sandbox.max_tool_calls" in str(execution.ended_by)
    assert len(tools.calls) == len(execution.tool_calls) == 1


async def test_arguments_over_their_cap_end_the_execution_before_the_call() -> None:
    tools = InProcessTools({"m.add": add})
    execution = run(SandboxLimits(max_tool_args_bytes=32), tools)
    assert await call(execution, "m.add", json.dumps({"a": "x" * 40})) is None
    assert isinstance(execution.ended_by, ToolPayloadTooLarge)
    assert "sandbox.max_tool_args_bytes" in str(execution.ended_by)
    assert tools.calls == []
    assert execution.tool_calls == []


async def test_a_result_over_its_cap_ends_the_execution_and_is_recorded_as_too_large() -> None:
    execution = run(SandboxLimits(max_tool_result_bytes=16), InProcessTools({"m.big": lambda: "x" * 100}))
    assert await call(execution, "m.big") is None
    assert isinstance(execution.ended_by, ToolPayloadTooLarge)
    assert "102 bytes" in str(execution.ended_by)
    assert "sandbox.max_tool_result_bytes" in str(execution.ended_by)
    assert [(r.ok, r.error) for r in execution.tool_calls] == [(False, "result too large")]


@pytest.mark.parametrize("depth", [65, 100_000])
async def test_arguments_nested_too_deep_are_refused_as_a_catchable_tool_error(depth: int) -> None:
    tools = InProcessTools({"m.f": lambda a: a})
    execution = run(tools=tools)
    args = '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    error = refusal(await call(execution, "m.f", args))
    assert error == {"type": "ToolError", "message": "arguments to m.f nest deeper than 64 levels"}
    assert tools.calls == []
    assert execution.ended_by is None


async def test_arguments_nested_to_the_limit_are_accepted() -> None:
    execution = run(tools=InProcessTools({"m.f": lambda a: 1}))
    assert await call(execution, "m.f", '{"a": ' + "[" * 63 + "]" * 63 + "}") == Variant("ok", "1")


@pytest.mark.parametrize(
    ("args", "said"), [("[1, 2]", "got list"), ("7", "got int"), ("{", "not valid JSON")]
)
async def test_arguments_that_are_not_a_json_object_are_refused(args: str, said: str) -> None:
    tools = InProcessTools({"m.f": lambda: 1})
    error = refusal(await call(run(tools=tools), "m.f", args))
    assert error["type"] == "ToolError"
    assert said in error["message"]
    assert tools.calls == []


async def test_an_unknown_host_service_is_refused_and_never_reaches_the_tool_caller() -> None:
    tools = InProcessTools({})
    execution = run(tools=tools)
    error = refusal(await call(execution, "@files", '{"path": "/etc/passwd"}'))
    assert error == {"type": "ToolError", "message": "unknown host service '@files'"}
    assert tools.calls == []
    assert execution.tool_calls == []
    assert execution.ended_by is None


async def test_the_clock_and_short_sleeps_are_served_and_a_sleep_past_the_budget_ends_it() -> None:
    execution = run(timeout=5)
    assert json.loads(payload(await call(execution, "@clock"), "ok"))["time_ns"] > 0
    assert await call(execution, "@sleep", '{"seconds": 0}') == Variant("ok", "{}")
    assert refusal(await call(execution, "@sleep", '{"seconds": -1}'))["type"] == "ValueError"
    assert await call(execution, "@sleep", '{"seconds": 60}') is None
    assert isinstance(execution.ended_by, WallTimeExceeded)
    assert "time.sleep(60)" in str(execution.ended_by)


async def test_a_tool_call_past_its_own_timeout_is_a_catchable_error() -> None:
    execution = run(SandboxLimits(tool_call_timeout_seconds=0.05), InProcessTools({"m.hang": hang}))
    error = refusal(await call(execution, "m.hang"))
    assert error["message"] == "m.hang timed out after 0.05 s (sandbox.tool_call_timeout_seconds)"
    assert [(r.ok, r.error, r.message) for r in execution.tool_calls] == [
        (False, "timeout", error["message"])
    ]
    assert execution.ended_by is None


async def test_a_tool_call_timing_out_while_it_waits_for_its_callers_share_says_which_limit_held_it() -> None:
    shares, release = Shares(2), anyio.Event()  # alice's share: 1

    async def in_alices_share() -> None:
        async with shares.held("alice", lambda: "waiting for its caller's share (max_concurrent_calls)"):
            pytest.fail("alice's second call got a place past her share")

    async def alice_holds(*, task_status: TaskStatus[None]) -> None:
        async with shares.held("alice"):
            task_status.started()
            await release.wait()

    tools = InProcessTools({"m.held": in_alices_share})
    execution = run(SandboxLimits(tool_call_timeout_seconds=0.05), tools)
    async with anyio.create_task_group() as group:
        await group.start(alice_holds)
        error = refusal(await call(execution, "m.held"))
        release.set()
        assert error["message"] == (
            "m.held timed out after 0.05 s (sandbox.tool_call_timeout_seconds) waiting for its caller's "
            "share (max_concurrent_calls)"
        )
    assert [(r.ok, r.error) for r in execution.tool_calls] == [(False, "timeout")]


async def test_a_refused_calls_record_keeps_what_the_snippet_was_told_on_one_short_line() -> None:
    async def refuse() -> None:
        raise PolicyDenied("not this one:\n" + "because " * 100, rule="policy.deny")

    execution = run(tools=InProcessTools({"m.refuse": refuse}))
    told = refusal(await call(execution, "m.refuse"))["message"]
    [record] = execution.tool_calls
    assert record.message is not None
    assert record.message.startswith("not this one: because because")
    assert "\n" not in record.message
    assert len(record.message) == 200 < len(told)


async def test_a_refusals_further_lines_reach_the_snippet_indented_under_its_first() -> None:
    # A child's error text must not start a line where the gateway's own lines start in the result.
    async def refuse() -> None:
        raise ToolCallError("bad input: x\n[stderr]\rWallTimeExceeded: no\u2028[m.x failed: no]\n  kept")

    told = refusal(await call(run(tools=InProcessTools({"m.refuse": refuse})), "m.refuse"))["message"]
    assert told == "bad input: x\n  [stderr]\n  WallTimeExceeded: no\n  [m.x failed: no]\n  kept"


SERVICE_PAYLOAD = '{"name": "m.add", "arguments": {"a": [' + "0," * 1_100_000 + "0]}}"  # 2.2 MB


@pytest.mark.parametrize(
    ("service", "ended_by", "said"),
    [
        ("@start", ToolPayloadTooLarge, "arguments to m.add are over the 262144-byte cap (sandbox.max_tool"),
        ("@show", ShownTooLarge, "sandbox.max_shown_bytes"),
        ("@sleep", None, "the host's sleep service is 2,200,042 bytes, over its 1,048,576-byte cap"),
        ("@wait", None, "over its 1,048,576-byte cap"),
        ("@cancel", None, "over its 1,048,576-byte cap"),
        ("@resources", None, "over its 1,048,576-byte cap"),
    ],
)
async def test_a_host_service_refuses_what_it_was_sent_past_its_cap_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch, service: str, ended_by: type[Exception] | None, said: str
) -> None:
    # Parsing holds the interpreter and memory several times the text: a 60 MB call that the guest
    # could send took the host 12 s and 800 MB before it measured the arguments.
    parsed: list[int] = []
    decoder = host_call_module._DECODER  # pyright: ignore[reportPrivateUsage]

    class Measured:
        def decode(self, text: str) -> Any:
            parsed.append(len(text))
            return decoder.decode(text)

    monkeypatch.setattr(host_call_module, "_DECODER", Measured())
    execution = run(SandboxLimits(max_shown_bytes=1024), InProcessTools({"m.add": add}))
    answer = await call(execution, service, SERVICE_PAYLOAD)
    assert parsed == []
    if ended_by is None:
        assert said in refusal(answer)["message"]
    else:
        assert answer is None
        assert isinstance(execution.ended_by, ended_by)
        assert said in str(execution.ended_by)
    assert execution.tool_calls == []


async def test_a_tool_call_past_the_wall_clock_budget_ends_the_execution() -> None:
    execution = run(tools=InProcessTools({"m.hang": hang}), timeout=0.3)
    assert await call(execution, "m.hang") is None
    assert isinstance(execution.ended_by, WallTimeExceeded)
    assert "sandbox.timeout_seconds" in str(execution.ended_by)
    assert execution.tool_calls[0].error == "timeout"


async def test_a_tool_error_reaches_the_snippet_with_its_kind() -> None:
    async def denied() -> None:
        raise PolicyDenied("policy denies repo.delete (policy.deny)", rule="policy.deny")

    execution = run(tools=InProcessTools({"repo.delete": denied}))
    error = refusal(await call(execution, "repo.delete"))
    assert error == {"type": "PolicyDenied", "message": "policy denies repo.delete (policy.deny)"}
    assert execution.tool_calls[0].error == "PolicyDenied"


async def test_a_raising_tool_caller_is_a_contained_crash_that_does_not_leak_the_exception(
    sandbox_log: list[logging.LogRecord],
) -> None:
    async def broken(name: str, arguments: dict[str, Any]) -> Any:
        raise RuntimeError("token=hunter2")

    execution = run(tools=broken)
    assert await call(execution, "m.f") is None
    assert isinstance(execution.ended_by, GuestCrashed)
    assert (
        str(execution.ended_by) == "the gateway failed while serving 'm.f': RuntimeError; see the gateway log"
    )
    logged = [r.exc_info[1] for r in sandbox_log if r.exc_info is not None]
    assert [(type(exc), str(exc)) for exc in logged] == [(RuntimeError, "token=hunter2")]
    assert not execution.tool_calls[0].ok


async def test_cancel_during_a_tool_call_ends_the_execution_as_cancelled_and_interrupts_it() -> None:
    started = anyio.Event()

    async def wait_forever() -> None:
        started.set()
        await anyio.sleep_forever()

    tools = InProcessTools({"m.wait": wait_forever})
    execution = run(tools=tools)
    interrupted: list[bool] = []
    execution.interrupt = lambda: interrupted.append(True)
    results: list[Variant | None] = []

    async def guest() -> None:
        results.append(await call(execution, "m.wait"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(guest)
            await started.wait()
            execution.cancel()
    assert results == [None]
    assert isinstance(execution.ended_by, ExecutionCancelled)
    assert interrupted == [True]
    assert await call(execution, "m.wait") is None  # nothing more runs once cancelled
    assert len(tools.calls) == 1


def test_a_host_call_on_a_thread_without_an_execution_is_refused() -> None:
    error = refusal(host_call(None, "m.add", "{}"))
    assert error["message"] == "no execution is bound to this thread"


async def test_arguments_reach_the_tool_exactly_big_ints_key_order_and_text_included() -> None:
    received: list[dict[str, Any]] = []

    def keep(**arguments: Any) -> str:
        received.append(arguments)
        return "kept"

    execution = run(tools=InProcessTools({"m.keep": keep}))
    text = '{"z": 123456789012345678901234567890, "a": -9223372036854775809, "m": 1.5e300, "s": "é\\u2603"}'
    assert await call(execution, "m.keep", text) == Variant("ok", '"kept"')
    [arguments] = received
    assert arguments == {
        "z": 123456789012345678901234567890,
        "a": -9223372036854775809,
        "m": 1.5e300,
        "s": "é☃",
    }
    assert list(arguments) == ["z", "a", "m", "s"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ('{"x": NaN}', "NaN is not a JSON number"),
        ('{"x": -Infinity}', "-Infinity is not a JSON number"),
        ('{"x": 1e999}', "inf is not a JSON number (a literal too large for a float)"),
        ('\ufeff{"x": 1}', "Unexpected UTF-8 BOM"),
    ],
)
async def test_numbers_json_cannot_hold_and_a_byte_order_mark_are_refused(args: str, said: str) -> None:
    tools = InProcessTools({"m.add": add})
    error = refusal(await call(run(tools=tools), "m.add", args))
    assert error["type"] == "ToolError"
    assert said in error["message"]
    assert tools.calls == []


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (
            {"b": 1, "a": [2**80, -(2**70)]},
            '{"b": 1, "a": [1208925819614629174706176, -1180591620717411303424]}',
        ),
        ("é☃", '"é☃"'),
        ("lone \ud800 surrogate", '"lone \\ud800 surrogate"'),
        ({1: "non-string key"}, '{"1": "non-string key"}'),
    ],
)
async def test_a_result_reaches_the_guest_as_exact_json_text(value: Any, sent: str) -> None:
    execution = run(tools=InProcessTools({"m.value": lambda: value}))
    assert await call(execution, "m.value") == Variant("ok", sent)


@pytest.mark.parametrize("value", [float("nan"), [float("inf")], {"x": -float("inf")}])
async def test_a_result_with_a_non_finite_number_is_refused_not_sent_as_null(value: Any) -> None:
    execution = run(tools=InProcessTools({"m.value": lambda: value}))
    error = refusal(await call(execution, "m.value"))
    assert "returned a value that is not JSON the sandbox can take" in error["message"]
    assert execution.tool_calls[0].error == "bad result"
