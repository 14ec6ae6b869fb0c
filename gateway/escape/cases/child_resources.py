"""A child's resources from a snippet (`resources.<server>.list()` and `.read(uri)`): the policy over
`server:uri`, redaction of what a resource says, the quota and call caps, and forged requests.

The probe server offers `note://public`, `note://token` (quoting its token), `secret://vault` (the
suite's policy denies `probe:secret://*`) and `hidden://admin` (hidden by `probe:hidden://*`).
"""

from __future__ import annotations

import json
from typing import cast

from gateway.escape.cases._model import (
    EscapeCase,
    case_maker,
    host_call_with,
    limit,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
)
from gateway.escape.cases._probe import PROBE_SECRET, QUOTA
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("child-resources", "gateway")
_bare = case_maker("child-resources")
_ONE = needs_tool_calls(1)


def _caught(expression: str) -> str:
    """Snippet: the ToolError `expression` raises, as [its kind, its message]."""
    return f"try:\n    {expression}\nexcept ToolError as e:\n    caught = [e.kind, str(e)]\ncaught"


def _ask(payload: dict[str, object]) -> str:
    return host_call_with("@resources", payload)


def _no_secret(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    return result.ok and PROBE_SECRET not in json.dumps([result.value, result.stdout])


def _hidden_like_absent(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    """A hidden resource is refused in the very words of one that does not exist, and never listed."""
    value: object = result.value
    if not (result.ok and isinstance(value, list)):
        return False
    parts = [str(part) for part in cast("list[object]", value)]
    if len(parts) != 3:
        return False
    hidden, missing, listed = parts
    same = hidden.replace("hidden://admin", "X") == missing.replace("nothing://here", "X")
    return same and "hidden://" not in listed


CASES: tuple[EscapeCase, ...] = (
    _case("res-public-read", "resources.probe.read('note://public')", value_is("public note"), needs=_ONE),
    _case(
        "res-token-redacted",
        "resources.probe.read('note://token')",
        succeeds(_no_secret, "the probe's token is redacted"),
        needs=_ONE,
    ),
    _case(
        "res-denied-by-rule",
        _caught("resources.probe.read('secret://vault')"),
        succeeds(lambda r, _: r.ok and "PolicyDenied" in str(r.value) and "probe:secret://*" in str(r.value)),
        needs=_ONE,
    ),
    _case(
        "res-hidden-looks-absent",
        "def refusal(uri):\n    try:\n        resources.probe.read(uri)\n    except ToolError as e:\n"
        "        return [e.kind, str(e)]\n"
        "[refusal('hidden://admin'), refusal('nothing://here'), resources.probe.list()]",
        succeeds(_hidden_like_absent, "refused as absent, and not listed"),
        needs=needs_tool_calls(3),
    ),
    _case(
        "res-quota-counts-reads",
        f"n = 0\nfor _ in range({QUOTA + 2}):\n    try:\n        resources.probe.read('note://public')\n"
        "        n += 1\n    except ToolError as e:\n        last = e.kind\n[n, last]",
        value_is([QUOTA, "QuotaExceeded"]),
        needs=needs_tool_calls(QUOTA + 2),
    ),
    _case(
        "res-reads-count-against-the-call-limit",
        lambda limits: (
            f"for _ in range({limits.max_tool_calls + 1}):\n"
            "    try:\n        resources.probe.list()\n    except ToolError:\n        pass"
        ),
        limit("ToolCallLimitExceeded"),
    ),
    _case(
        "res-forged-op",
        _ask({"server": "probe", "op": "write", "uri": "note://public"}),
        refused("Err"),
    ),
    _case(
        "res-forged-uri-too-long",
        _ask({"server": "probe", "op": "read", "uri": "x" * 5000}),
        refused("Err"),
    ),
    _case("res-forged-no-server", _ask({"op": "list"}), refused("Err", "server name")),
    _bare(
        "res-no-children",
        "resources.probe.list()",
        refused("ToolError", "no child servers serve this sandbox"),
    ),
)
