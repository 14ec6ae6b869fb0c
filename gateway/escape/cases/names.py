"""Names and URIs a rule judges: the policy must judge exactly what the child gets, and a rule must
keep meaning the tool it was written for.

The probe offers `repo://{owner}/{repo}/{name}`, a template whose parameters the SDK percent-decodes;
the suite's policy hides `probe:repo://acme/secrets/*`, denies `probe:repo://acme/private/*`, and
keeps `probe.read_path`'s path out of `/srv/secrets` with a `not` pattern. The `shift` child lists a
destructive `drop-all` (`shift.drop_all`, which the policy denies) until `grow()` adds a harmless
tool spelled `drop_all` and says its tool list changed.
"""

from __future__ import annotations

import json
from typing import cast

from gateway.escape.cases._model import EscapeCase, Expect, case_maker, needs_tool_calls, succeeds, value_is
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("names", "gateway")
_ONE = needs_tool_calls(1)


def _caught(expression: str) -> str:
    """Snippet: `expression`'s value, or the ToolError it raises as [its kind, its message]."""
    return f"try:\n    caught = {expression}\nexcept ToolError as e:\n    caught = [e.kind, str(e)]\ncaught"


def _refused_with(kind: str, *says: str, leaked: str = "contents of") -> Expect:
    """The snippet caught a ToolError of `kind` whose message says each of `says`, and read nothing."""

    def check(result: ExecutionResult, _limits: SandboxLimits) -> bool:
        value: object = result.value
        if not (result.ok and isinstance(value, list) and len(cast("list[object]", value)) == 2):
            return False
        got_kind, message = (str(part) for part in cast("list[object]", value))
        return got_kind == kind and all(s in message for s in says) and leaked not in json.dumps(value)

    return succeeds(check, f"a {kind} saying {' and '.join(map(repr, says))}, and nothing read")


def _nothing_dropped(_first: ExecutionResult, second: ExecutionResult) -> bool:
    """Every way to the destructive tool was refused once the tool list changed."""
    value: object = second.value
    if not (second.ok and isinstance(value, list)):
        return False
    answers = cast("list[object]", value)
    return len(answers) == 3 and all(answer in ("PolicyDenied", "ToolError") for answer in answers)


def _shifted(overview: str) -> bool:
    """The gateway has listed the shift child's new tool (or blocked the server for it)."""
    line = next((line for line in overview.splitlines() if line.lstrip("- ").startswith("shift ")), "")
    return "blocked" in line or "3 tools" in line


_TRY_EVERY_NAME = """
answers = []
for name in ('shift.drop-all', 'shift.drop_all_2', 'shift.drop_all'):
    try:
        answers.append(call_tool(name))
    except ToolError as e:
        answers.append(e.kind)
answers
"""

CASES: tuple[EscapeCase, ...] = (
    _case(
        "uri-template-public-read",
        "resources.probe.read('repo://acme/public/readme')",
        value_is("contents of acme/public/readme"),
        needs=_ONE,
    ),
    # A hidden resource read by a percent-escaped URI: refused in the words of an absent one.
    _case(
        "uri-escaped-path-past-hidden",
        _caught("resources.probe.read('repo://acme/%73ecrets/key')"),
        _refused_with("ToolError", "no resource 'repo://acme/secrets/key'"),
        needs=_ONE,
    ),
    _case(
        "uri-escaped-authority-past-hidden",
        _caught("resources.probe.read('repo://%61cme/secrets/key')"),
        _refused_with("ToolError", "no resource 'repo://acme/secrets/key'"),
        needs=_ONE,
    ),
    _case(
        "uri-escaped-path-past-deny",
        _caught("resources.probe.read('repo://acme/%70rivate/key')"),
        _refused_with("PolicyDenied", "probe:repo://acme/private/*"),
        needs=_ONE,
    ),
    _case(
        "uri-upper-case-scheme-past-hidden",
        _caught("resources.probe.read('REPO://acme/secrets/key')"),
        _refused_with("ToolError", "no resource 'repo://acme/secrets/key'"),
        needs=_ONE,
    ),
    # Escapes that would change the URI's structure once decoded have no one meaning to judge.
    _case(
        "uri-escaped-slash-refused",
        _caught("resources.probe.read('repo://acme%2Fsecrets/key/x')"),
        _refused_with("ToolError", "'%2F'", "write the URI without it"),
        needs=_ONE,
    ),
    _case(
        "uri-double-escape-refused",
        _caught("resources.probe.read('repo://acme/%2573ecrets/key')"),
        _refused_with("ToolError", "'%25'"),
        needs=_ONE,
    ),
    _case(
        "uri-dot-segment-refused",
        _caught("resources.probe.read('repo://acme/public/%2e%2e/secrets')"),
        _refused_with("ToolError", "'..' segment"),
        needs=_ONE,
    ),
    # A deny-list on a path argument sees `/srv/%73ecrets`, which the child would read as /srv/secrets.
    _case(
        "path-argument-escaped-past-not-pattern",
        _caught("tools.probe.read_path(path='/srv/%73ecrets/key')"),
        _refused_with("PolicyDenied", "'%73'", leaked="read /srv"),
        needs=_ONE,
    ),
    # The child adds a harmless `drop_all`: the destructive `drop-all` would become `drop_all_2`, and
    # the deny written as `shift.drop_all` would move to the harmless one. The server is blocked instead.
    _case(
        "tool-name-shift-moves-no-rule",
        "tools.shift.grow()",
        value_is({"result": "grown"}),
        then=_TRY_EVERY_NAME,
        then_check=_nothing_dropped,
        then_when=_shifted,
        needs=needs_tool_calls(3),
    ),
)
