"""Policy and secrets, through a whole Gateway in front of the probe MCP server (`escape.probe_server`).

The suite's own policy (`PROBE_POLICY`) denies, hides, constrains, rate-limits and gates the probe's
tools; the cases try to get past each rule. The probe's environment holds `PROBE_SECRET`, which the
config expands from a variable (see `_probe`): the gateway must redact it from all the snippet sees.
"""

from __future__ import annotations

import json

from gateway.escape.cases._model import (
    HOST_IMPORT,
    EscapeCase,
    Expect,
    case_maker,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
)
from gateway.escape.cases._probe import PROBE_SECRET, PROBE_SECRET_VAR, QUOTA, RATE, TOOL_QUOTA
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_policy = case_maker("policy", "gateway")
_secret = case_maker("secrets", "gateway")
_DENIED = refused("ToolError", "denied by policy")
_NEEDS_APPROVAL = refused("ToolError", "needs the user's approval")
_NO_SUCH_TOOL = Expect(
    ("ToolError",),
    check=lambda r, _: (
        r.error is not None and ("unknown tool" in r.error.message or "denied by policy" in r.error.message)
    ),
    what="an unknown tool, or the same denial",
)


def _count_successes(call: str, times: int, *, keep: str = "") -> str:
    """Try `call` `times` times, swallowing refusals; the value is [successes, last refusal]."""
    return (
        f"n, last = 0, None\nfor _ in range({times}):\n    try:\n        {call}\n        n += 1\n"
        f"    except ToolError as e:\n        last = e.{keep or 'kind'}\n[n, last]"
    )


def _leaked_forms(secret: str) -> list[str]:
    return [secret, secret[::-1], " ".join(secret), secret.upper()]


def _no_secret(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    seen = json.dumps(
        [
            result.value,
            result.value_repr,
            result.stdout,
            result.stderr,
            result.error and result.error.message,
        ],
        ensure_ascii=False,
    )
    return not any(form in seen for form in _leaked_forms(PROBE_SECRET))


def _no_secret_but_redacted(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return _no_secret(result, limits) and "REDACTED" in json.dumps([result.value, result.stdout])


_TRANSFORMS = "[m, m[::-1], ' '.join(m), m.upper()]"
_REVEAL = "m = tools.probe.reveal(name='PROBE_TOKEN')['result']\n"
_REVEAL_IN_ERROR = (
    "try:\n    tools.probe.reveal_in_error(name='PROBE_TOKEN')\nexcept ToolError as e:\n    m = str(e)\n"
)

CASES: tuple[EscapeCase, ...] = (
    _policy(
        "policy-allowed-call-works",
        "tools.probe.echo(text='hi')",
        value_is({"result": "hi"}),
        needs=needs_tool_calls(1),
    ),
    _policy("policy-denied-tool", "tools.probe.delete_all()", _DENIED, needs=needs_tool_calls(1)),
    _policy(
        "policy-denied-raw-host-call",
        HOST_IMPORT + "host.call('probe.delete_all', '{}')",
        refused("Err", "denied by policy"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-denied-retried",
        _count_successes("tools.probe.delete_all()", 5),
        value_is([0, "PolicyDenied"]),
        needs=needs_tool_calls(5),
    ),
    _policy("policy-denied-name-case", "tools.probe.Delete_All()", _NO_SUCH_TOOL, needs=needs_tool_calls(1)),
    _policy(
        "policy-denied-server-case", "call_tool('Probe.delete_all')", _NO_SUCH_TOOL, needs=needs_tool_calls(1)
    ),
    _policy(
        "policy-denied-name-padded",
        "call_tool('probe.delete_all ')",
        _NO_SUCH_TOOL,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-denied-name-nul",
        "call_tool('probe.delete_all\\x00')",
        _NO_SUCH_TOOL,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-hidden-tool-looks-unknown",
        "tools.probe.internal_admin()",
        Expect(
            ("ToolError",),
            "unknown tool",
            check=lambda r, _: r.error is not None and "polic" not in r.error.message,
            what="nothing says a policy hides it",
        ),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-hidden-tool-never-suggested",
        "tools.probe.internal_admn()",
        Expect(
            ("ToolError",),
            "unknown tool",
            check=lambda r, _: r.error is not None and "internal_admin" not in r.error.message,
            what="the hidden name is not among the suggestions",
        ),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-hidden-raw-host-call",
        HOST_IMPORT + "host.call('probe.internal_admin', '{}')",
        refused("Err", "unknown tool"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-allowed-value",
        "tools.probe.read_note(name='alpha')",
        value_is({"result": "note alpha"}),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-other-value", "tools.probe.read_note(name='gamma')", _DENIED, needs=needs_tool_calls(1)
    ),
    _policy(
        "policy-args-case-folded", "tools.probe.read_note(name='ALPHA')", _DENIED, needs=needs_tool_calls(1)
    ),
    _policy(
        "policy-args-fullwidth",
        "tools.probe.read_note(name='\\uff41\\uff4c\\uff50\\uff48\\uff41')",  # fullwidth "alpha"
        _DENIED,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-trailing-nul",
        "tools.probe.read_note(name='alpha\\x00')",
        _DENIED,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-trailing-space",
        "tools.probe.read_note(name='alpha ')",
        _DENIED,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-zero-width",
        "tools.probe.read_note(name='al\\u200bpha')",
        _DENIED,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-list-value",
        "tools.probe.read_note(name=['alpha'])",
        refused("ToolError"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-duplicate-json-keys",
        HOST_IMPORT + 'host.call(\'probe.read_note\', \'{"name": "alpha", "name": "gamma"}\')',
        refused("Err", "denied by policy"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-lookalike-key",
        "tools.probe.read_note(name='alpha', Name='gamma')",
        refused("ToolError", "unknown argument"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-args-omitted", "tools.probe.read_note()", refused("ToolError"), needs=needs_tool_calls(1)
    ),
    _policy(
        "policy-quota-per-tool",
        _count_successes("tools.probe.read_note(name='beta')", TOOL_QUOTA + 3),
        value_is([TOOL_QUOTA, "QuotaExceeded"]),
        then="tools.probe.read_note(name='beta')",
        then_check=lambda _, second: second.ok,  # the quota is per execution
        needs=needs_tool_calls(TOOL_QUOTA + 3),
    ),
    _policy(
        "policy-quota-counts-raw-host-calls",
        "for _ in range(3):\n    tools.probe.read_note(name='alpha')\n"
        + HOST_IMPORT
        + "host.call('probe.read_note', '{\"name\": \"alpha\"}')",
        refused("Err", "QuotaExceeded"),
        needs=needs_tool_calls(4),
    ),
    _policy(
        "policy-quota-per-execution",
        _count_successes("tools.probe.echo(text='x')", QUOTA + 2),
        value_is([QUOTA, "QuotaExceeded"]),
        needs=needs_tool_calls(QUOTA + 2),
    ),
    _policy(
        "policy-rate-limit-outlives-the-execution",
        _count_successes("tools.probe.count()", RATE + 2),
        value_is([RATE, "QuotaExceeded"]),
        then="try:\n    tools.probe.count()\nexcept ToolError as e:\n    r = e.kind\nr",
        then_check=lambda _, second: second.ok and second.value == "QuotaExceeded",
        needs=needs_tool_calls(RATE + 2),
    ),
    _policy(
        "policy-approval-unavailable",
        "tools.probe.write_note(name='a', text='b')",
        _NEEDS_APPROVAL,
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-approval-raw-host-call",
        HOST_IMPORT + 'host.call(\'probe.write_note\', \'{"name": "a", "text": "b"}\')',
        refused("Err", "approval"),
        needs=needs_tool_calls(1),
    ),
    _policy(
        "policy-approval-retried",
        _count_successes("tools.probe.write_note(name='a', text='b')", 3),
        value_is([0, "PolicyDenied"]),
        needs=needs_tool_calls(3),
    ),
    _policy(
        "policy-approval-in-gather",
        "import asyncio\nasync def w(i):\n    return tools.probe.write_note(name=str(i), text='b')\n"
        "await asyncio.gather(*(w(i) for i in range(3)))",
        _NEEDS_APPROVAL,
        needs=needs_tool_calls(3),
    ),
    _secret(
        "secret-in-result-redacted",
        _REVEAL + "m",
        succeeds(_no_secret_but_redacted, "the child's answer reaches the snippet redacted"),
        needs=needs_tool_calls(1),
    ),
    _secret(
        "secret-in-result-transformed",
        _REVEAL + _TRANSFORMS,
        succeeds(_no_secret, "no transformed form of the secret comes out"),
        needs=needs_tool_calls(1),
    ),
    _secret(
        "secret-in-result-printed",
        _REVEAL + "print(m)\nprint(m[::-1])",
        succeeds(_no_secret_but_redacted, "printed redacted"),
        needs=needs_tool_calls(1),
    ),
    _secret(
        "secret-in-child-error",
        "tools.probe.reveal_in_error(name='PROBE_TOKEN')",
        Expect(("ToolError",), check=_no_secret, what="the error reaches the client redacted"),
        needs=needs_tool_calls(1),
    ),
    # A child's error message is the snippet's to transform, just like a result: it must arrive redacted.
    _secret(
        "secret-in-child-error-transformed",
        _REVEAL_IN_ERROR + _TRANSFORMS,
        succeeds(_no_secret, "no transformed form of the secret comes out"),
        needs=needs_tool_calls(1),
    ),
    _secret(
        "secret-host-variable-not-in-child",
        f"tools.probe.reveal(name='{PROBE_SECRET_VAR}')",
        value_is({"result": None}),
        needs=needs_tool_calls(1),
    ),
)
