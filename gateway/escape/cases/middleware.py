"""Team middleware that misbehaves (`gateway.escape.probe_middleware`), through a whole Gateway.

The suite's gateway lists the probe middleware in front of the probe server with a short
`middleware_timeout_seconds`; each case runs as a caller whose principal tells it how to misbehave.
Containment: the call fails closed (a ToolError naming the middleware, never its traceback), what
the gateway redacts stays redacted both ways, the policy holds for what the middleware sends, and
the gateway serves on (the runner checks after every case).
"""

from __future__ import annotations

import json

from gateway.auth import Identity
from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    Seen,
    case_maker,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
    within_budget,
    wrote_nothing,
)
from gateway.escape.cases._probe import PROBE_SECRET
from gateway.escape.probe_middleware import MODE_PREFIX
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("middleware", "gateway")
_NAME = "gateway.escape.probe_middleware:misbehave"
_ECHO = "tools.probe.echo(text='hi')"


def _as(mode: str) -> Identity:
    return Identity(MODE_PREFIX + mode)


def _no_secret(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    seen = json.dumps([result.value, result.stdout, result.stderr, result.error and result.error.message])
    return PROBE_SECRET not in seen


def _redacted(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return _no_secret(result, limits) and "REDACTED" in json.dumps(result.value)


def _failed(says: str, *, budget: bool = False) -> Expect:
    """The call failed closed: a ToolError naming the middleware and `says`, nothing of the secret."""

    def check(result: ExecutionResult, limits: SandboxLimits) -> bool:
        named = result.error is not None and _NAME in result.error.message
        return named and _no_secret(result, limits) and (not budget or within_budget(result, limits))

    return Expect(("ToolError",), says, check=check, what="names the middleware, leaks nothing")


def _noted_once(seen: Seen) -> str | None:
    texts = seen.notes.get("twice", ())
    return None if texts == ("once",) else f"the approved write should reach the probe once, it got {texts}"


CASES: tuple[EscapeCase, ...] = (
    _case(
        "middleware-raises",
        _ECHO,
        _failed("failed (RuntimeError)"),
        needs=needs_tool_calls(1),
        caller=_as("raise"),
    ),
    _case(
        "middleware-refuses-quoting-a-secret",
        _ECHO,
        Expect(
            ("ToolError",), "refused: the token is", check=_no_secret, what="the refusal arrives redacted"
        ),
        needs=needs_tool_calls(1),
        caller=_as("refuse-quoting-secret"),
    ),
    _case(
        "middleware-hangs",
        _ECHO,
        _failed("did not finish within", budget=True),
        needs=needs_tool_calls(1),
        caller=_as("hang"),
    ),
    _case(
        "middleware-hangs-after-the-child-answered",
        _ECHO,
        _failed("did not finish within", budget=True),
        needs=needs_tool_calls(1),
        caller=_as("hang-after-child"),
    ),
    _case(
        "middleware-returns-what-is-not-json",
        _ECHO,
        _failed("not JSON"),
        needs=needs_tool_calls(1),
        caller=_as("not-json"),
    ),
    _case(
        "middleware-rewrites-arguments-past-an-args-constraint",
        "tools.probe.read_note(name='alpha')",
        refused("ToolError", f"as middleware {_NAME} changed them"),
        needs=needs_tool_calls(1),
        caller=_as("other-arguments"),
    ),
    _case(
        "middleware-redirects-to-a-denied-tool",
        _ECHO,
        _failed("may change only its arguments"),
        needs=needs_tool_calls(1),
        caller=_as("denied-tool"),
    ),
    _case(
        "middleware-redirects-to-a-hidden-tool",
        _ECHO,
        _failed("may change only its arguments"),
        needs=needs_tool_calls(1),
        caller=_as("hidden-tool"),
    ),
    _case(
        "middleware-passes-arguments-that-are-not-a-dict",
        "tools.probe.read_note(name='alpha')",
        _failed("not a dict"),
        needs=needs_tool_calls(1),
        caller=_as("arguments-not-a-dict"),
    ),
    _case(
        "middleware-puts-a-secret-into-the-arguments",
        _ECHO,
        Expect(("SecretInArguments",), check=_no_secret, what="the run ends before the child gets it"),
        needs=needs_tool_calls(1),
        caller=_as("secret-in-arguments"),
    ),
    _case(
        "middleware-returns-a-secret",
        _ECHO,
        succeeds(_redacted, "the value arrives with the secret redacted"),
        needs=needs_tool_calls(1),
        caller=_as("return-secret"),
    ),
    _case(
        "middleware-sees-results-redacted",
        "tools.probe.reveal(name='PROBE_TOKEN')",
        value_is({"saw_secret": False}),
        needs=needs_tool_calls(1),
        caller=_as("look-for-secret"),
    ),
    _case(
        "middleware-calls-the-child-twice",
        "tools.probe.write_note(name='twice', text='once')",
        _failed("twice"),
        needs=needs_tool_calls(1),
        sees=_noted_once,
        approve=True,
        caller=_as("call-twice"),
    ),
    _case(
        "middleware-hidden-tool-stays-unknown",
        "tools.probe.internal_admin()",
        refused("ToolError", "unknown tool"),
        needs=needs_tool_calls(1),
        sees=wrote_nothing,
        caller=_as("raise"),  # refused before any middleware runs: the hidden tool is never named
    ),
)
