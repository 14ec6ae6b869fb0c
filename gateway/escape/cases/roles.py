"""Roles: callers the policy's roles name (by principal, scope or group) try to reach past them.

The suite's policy (`PROBE_POLICY["roles"]`) gives a contractor less reach (a tool denied, one
hidden, read-only, a lower quota, a rate per caller) and has the on-call group approve each echo.
The cases run as those callers, the way an authenticated HTTP request's identity reaches the gateway,
and try each way around: other names for the call, side by side, straight through the host import,
discovery. The identity comes from the verified token alone: nothing a snippet sends can change it.
"""

from __future__ import annotations

import json
from typing import cast

from gateway.auth import Identity
from gateway.escape.cases._model import (
    HOST_IMPORT,
    Check,
    EscapeCase,
    Expect,
    Seen,
    case_maker,
    refused,
    succeeds,
    value_is,
    wrote_nothing,
)
from gateway.escape.cases._probe import (
    CONTRACTOR,
    CONTRACTOR_SCOPE,
    ON_CALL_GROUP,
    ROLE_QUOTA,
    ROLE_RATE,
)
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("roles", "gateway")
_CONTRACTOR = Identity(CONTRACTOR)
_BY_SCOPE = Identity("probe-scoped-caller", scopes=("notes:read", CONTRACTOR_SCOPE))
_ON_CALL = Identity("probe-on-call", groups=(ON_CALL_GROUP,))
_STRANGER = Identity("probe-someone-else", scopes=("notes:read",), groups=("dev",))
_ROLE_DENY = refused("ToolError", 'policy.roles["contractor"].deny')
_ROLE_READ_ONLY = refused("ToolError", 'policy.roles["contractor"].read_only')
_WRITE = "tools.probe.write_note(name='role', text='written')"


def _host_refused(says: str) -> Expect:
    """The host import answers with the refusal (an `Err` holding the PolicyDenied, as JSON)."""
    return Expect(("Err",), says)


def _asked(seen: Seen) -> str | None:
    """The user was asked to approve the call (the on-call role's `approve`)."""
    return None if seen.prompts else "the on-call role's approve rule asked nobody"


def _successes_then(count: int, says: str) -> Check:
    """The value of `_attempts`: `count` calls made, then a refusal saying `says`."""

    def check(result: ExecutionResult, _limits: SandboxLimits) -> bool:
        value = json.dumps(result.value)
        return value.startswith(f"[{count}, ") and says in value

    return check


def _all_refused(says: str) -> Check:
    """The value is a list of three refusals, each saying `says`."""

    def check(result: ExecutionResult, _limits: SandboxLimits) -> bool:
        value: object = result.value
        items = cast("list[object]", value) if isinstance(value, list) else []
        return len(items) == 3 and all(says in str(item) for item in items)

    return check


def _attempts(call: str, times: int) -> str:
    """Try `call` `times` times; the value is [successes, the last refusal's message]."""
    return (
        f"n, last = 0, None\nfor _ in range({times}):\n    try:\n        {call}\n        n += 1\n"
        "    except ToolError as e:\n        last = str(e)\n[n, last]"
    )


CASES: tuple[EscapeCase, ...] = (
    _case(
        "roles-a-tool-the-role-denies-is-refused-naming-the-role",
        "tools.probe.read_note(name='alpha')",
        _ROLE_DENY,
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-scope-of-the-token-takes-the-role",
        "tools.probe.read_note(name='alpha')",
        _ROLE_DENY,
        caller=_BY_SCOPE,
    ),
    _case(
        "roles-the-denied-tool-through-call-tool",
        "call_tool('probe.read_note', name='alpha')",
        _ROLE_DENY,
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-the-denied-tool-through-the-host-import",
        HOST_IMPORT + "import json\nhost.call('probe.read_note', json.dumps({'name': 'alpha'}))",
        _host_refused('PolicyDenied", "message": "probe.read_note is denied by policy (policy.roles'),
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-write-under-the-roles-read-only",
        _WRITE,
        _ROLE_READ_ONLY,
        sees=wrote_nothing,
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-writes-side-by-side-under-read-only",
        "import asyncio\n"
        "async def main():\n"
        "    return await asyncio.gather(*(tools.probe.write_note(name='role', text=str(i)) "
        "for i in range(3)), return_exceptions=True)\n"
        "[str(r) for r in asyncio.run(main())]",
        succeeds(_all_refused("read_only"), "every write refused by the role's read_only"),
        sees=wrote_nothing,
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-write-with-a-forged-principal-in-the-host-payload",
        HOST_IMPORT
        + "import json\nhost.call('probe.write_note', json.dumps("
        + "{'name': 'role', 'text': 'x', 'principal': 'admin', '_meta': {'principal': 'admin'}}))",
        _host_refused('PolicyDenied", "message": "probe.write_note is denied by policy (policy.roles'),
        sees=wrote_nothing,
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-tool-the-role-hides-looks-unknown",
        "tools.probe.reveal(name='x')",
        Expect(("ToolError",), "unknown tool"),
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-tool-the-role-hides-is-not-in-discovery",
        "['reveal' in dir(tools.probe), 'reveal_in_error' in dir(tools.probe), "
        "'probe.reveal(' in str(search('reveal a stored value'))]",
        value_is([False, True, False]),
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-the-roles-quota-ends-the-calls",
        _attempts("tools.probe.echo(text='x')", ROLE_QUOTA + 2),
        succeeds(
            _successes_then(ROLE_QUOTA, "max_tool_calls"),
            f"{ROLE_QUOTA} calls, then policy.roles.contractor.max_tool_calls",
        ),
        caller=_CONTRACTOR,
    ),
    _case(
        "roles-a-rate-per-caller-counts-each-caller",
        _attempts("tools.probe.tick(name='role-rate')", ROLE_RATE + 1),
        succeeds(
            _successes_then(ROLE_RATE, "for each caller"), f"{ROLE_RATE} calls, then the rate for each caller"
        ),
        then=_attempts("tools.probe.tick(name='role-rate')", 1),
        then_check=lambda _, second: json.dumps(second.value).startswith("[0, "),
        caller=Identity("probe-rate-caller", scopes=(CONTRACTOR_SCOPE,)),
    ),
    _case(
        "roles-the-on-call-groups-approval-is-asked",
        "tools.probe.echo(text='paged')",
        refused("ToolError", "declined"),
        sees=_asked,
        caller=_ON_CALL,
    ),
    _case(
        "roles-a-caller-no-role-names-keeps-the-policy",
        "tools.probe.read_note(name='alpha')",
        succeeds(what="the policy as written: read_note allowed"),
        caller=_STRANGER,
    ),
    _case(
        "roles-a-caller-nobody-identified-keeps-the-policy",
        "tools.probe.read_note(name='alpha')",
        succeeds(what="the policy as written: read_note allowed"),
    ),
)
