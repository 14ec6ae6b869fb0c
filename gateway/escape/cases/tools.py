"""Tool calls through the proxies: floods, oversized payloads, slow and failing tools, odd values.

These run against the in-process probe tools (`gateway.escape._runner.probe_tools`).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    crash,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
    within_budget,
)
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("tools")
_ONE = needs_tool_calls(1)


def _flooding(call: str, *, swallow: str = "") -> Callable[[SandboxLimits], str]:
    """More calls than the cap allows; `swallow` wraps each in a handler that cannot catch the limit."""
    body = f"    try:\n        {call}\n    except {swallow}:\n        pass" if swallow else f"    {call}"
    return lambda lim: f"for i in range({lim.max_tool_calls + 10}):\n" + body


def _all_calls_logged(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return len(result.tool_calls) == limits.max_tool_calls


_LIMITED = Expect(("ToolCallLimitExceeded",), check=_all_calls_logged, what="every allowed call is logged")


def _per_call_timeout_below_budget(limits: SandboxLimits) -> str | None:
    if limits.max_tool_calls < 1:
        return "needs 1 tool call; sandbox.max_tool_calls is 0"
    if limits.tool_call_timeout_seconds >= limits.timeout_seconds:
        return "sandbox.tool_call_timeout_seconds is not below the wall-clock budget"
    return None


def _result_cap_testable(limits: SandboxLimits) -> str | None:
    if limits.max_tool_result_bytes >= 10**8:
        return "sandbox.max_tool_result_bytes is too large to exceed in a test"
    return _ONE(limits)


_NESTED = "x = []\nfor _ in range({depth}):\n    x = [x]\n"

CASES: tuple[EscapeCase, ...] = (
    _case("tool-flood", _flooding("tools.probe.echo(i=i)"), _LIMITED),
    _case(
        "tool-flood-swallowing-errors",
        _flooding("tools.probe.echo(i=i)", swallow="BaseException"),
        _LIMITED,
    ),
    _case(
        "tool-flood-unknown-tools",
        _flooding("tools.probe.nothing_here(i=i)", swallow="ToolError"),
        _LIMITED,
    ),
    _case(
        "tool-flood-call-tool",
        _flooding("call_tool('probe.echo', i=i)"),
        _LIMITED,
    ),
    _case(
        "tool-flood-gather",
        lambda lim: (
            "import asyncio\nasync def one(i):\n    return tools.probe.echo(i=i)\n"
            f"await asyncio.gather(*(one(i) for i in range({lim.max_tool_calls + 10})))"
        ),
        _LIMITED,
    ),
    _case(
        "tool-huge-arguments",
        lambda lim: f"tools.probe.echo(blob='a' * {lim.max_tool_args_bytes + 1})",
        refused("ToolPayloadTooLarge", "sandbox.max_tool_args_bytes"),
        needs=_ONE,
    ),
    _case(
        "tool-huge-result",
        lambda lim: f"tools.probe.big(n={lim.max_tool_result_bytes})",
        refused("ToolPayloadTooLarge", "sandbox.max_tool_result_bytes"),
        needs=_result_cap_testable,
    ),
    _case("tool-unknown", "tools.nope.nothing()", refused("ToolError", "unknown tool"), needs=_ONE),
    _case(
        "tool-error-is-catchable",
        "try:\n    tools.probe.fail()\nexcept ToolError as e:\n    r = str(e)\nr",
        value_is("probe failed"),
        needs=_ONE,
    ),
    _case(
        "tool-per-call-timeout",
        "try:\n    tools.probe.slow(seconds=10**6)\nexcept ToolError as e:\n    r = str(e)\nr",
        succeeds(
            lambda r, _: "sandbox.tool_call_timeout_seconds" in str(r.value),
            "a catchable ToolError names sandbox.tool_call_timeout_seconds",
        ),
        needs=_per_call_timeout_below_budget,
    ),
    _case(
        "tool-slow-past-budget",
        "while True:\n    try:\n        tools.probe.slow(seconds=10**6)\n    except ToolError:\n        pass",
        Expect(("WallTimeExceeded",), check=within_budget, what="ended within the budget"),
        needs=_ONE,
    ),
    _case(
        "tool-host-bug-contained",
        "tools.probe.crash()",
        refused("GuestCrashed", "gateway log"),
        needs=_ONE,
    ),
    _case("tool-result-not-json", "tools.probe.weird()", refused("ToolError", "not JSON"), needs=_ONE),
    _case(
        "tool-nan-argument", "tools.probe.echo(x=float('nan'))", refused("TypeError", "must be JSON values")
    ),
    _case(
        "tool-object-argument", "tools.probe.echo(x=object())", refused("TypeError", "must be JSON values")
    ),
    _case(
        "tool-name-at-service",
        "call_tool('@sleep', seconds=1)",
        refused("ToolError", "tool name must be 'server.tool'"),
    ),
    _case("tool-name-empty", "call_tool('')", refused("ToolError", "tool name must be 'server.tool'")),
    _case(
        "tool-proxy-dunder",
        "try:\n    tools.__dict__\nexcept AttributeError:\n    r = 'no attribute'\nr",
        value_is("no attribute"),
    ),
    _case(
        "tool-argument-lone-surrogate",
        "tools.probe.echo(x='\\ud800')",
        crash("ToolError", ok=True),
        needs=_ONE,
    ),
    # The host parses arguments and encodes results: nesting or a lone surrogate from a child
    # must come back as a ToolError (or a value), never as a failure of the host itself.
    _case(
        "tool-arguments-nested-990-deep",
        _NESTED.format(depth=990) + "tools.probe.echo(x=x) is not None",
        Expect(("ToolError",), ok=True),
        needs=_ONE,
    ),
    _case(
        "tool-result-lone-surrogate",
        "from wit_world.imports import host\nhost.call('probe.echo', '{\"a\": \"\\\\ud800\"}')",
        Expect(("Err",), ok=True),
        needs=_ONE,
    ),
)
