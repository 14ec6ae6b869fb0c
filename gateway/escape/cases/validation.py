"""Argument validation at scale: linear-cost checks, ECMA-262 patterns, normalised paths (via a Gateway).

Every check of a tool call's arguments runs on the gateway's event loop, so one snippet's arguments
must never cost more than time linear in their size: the cases send what made jsonschema compare
every pair of items (`uniqueItems` over mixed types) and what made Python's `re` backtrack (an
unanchored pattern), and the whole call must come back within the execution's budget. The suite's
policy (`_probe.PROBE_POLICY`) also constrains `probe.read_file`'s path with `^/srv/safe/.*$` and
`probe.tag_count`'s tags with `^.+$` and the unanchored `[a-z]+:[a-z0-9]+`: the cases try paths
that leave the prefix (`..`, encoded, doubled separators), line terminators that ECMA-262's `.`
does not match, and duplicates that only JSON's equality finds.
"""

from __future__ import annotations

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    needs_fuel,
    needs_tool_calls,
    refused,
    roomy_clock,
    value_is,
    within_budget,
)
from gateway.escape.cases._probe import PROBE_PIN
from gateway.sandbox.limits import SandboxLimits

__all__ = ["CASES"]

_case = case_maker("validation", "gateway")
_ONE_CALL = needs_tool_calls(1)
_BUILD_FUEL = 250_000_000  # the large cases build their arguments with up to ~100 million


def _large(limits: SandboxLimits) -> str | None:
    """Why a config cannot run a case that builds large arguments, or None."""
    return _ONE_CALL(limits) or needs_fuel(_BUILD_FUEL)(limits)


def _quickly(error: str = "", says: str = "", *, ok: bool = False) -> Expect:
    """Refused with `error` naming `says` (or answered, with `ok`), within the execution's budget."""
    what = "answered within the execution's budget: the checks cost time linear in the arguments"
    return Expect((error,) if error else (), says, ok=ok, check=within_budget, what=what)


def _tags(expression: str) -> str:
    return f"tools.probe.tag_count(tags={expression})"


def _numbers(count: int) -> str:
    """`range(count)` less the numbers that spell the probe's PIN (a secret in arguments ends the run);
    the PIN is built at run time, since a traceback quoting it would withhold the whole output."""
    return f"[i for i in range({count}) if {PROBE_PIN[:2]!r} + {PROBE_PIN[2:]!r} not in str(i)]"


def _read(path: str) -> str:
    return f"tools.probe.read_file(path={path!r})"


_NON_UNIQUE = refused("ToolError", "non-unique elements")
_NOT_NORMALISED = refused("ToolError", "must be normalised paths")
_NO_MATCH = refused("ToolError", "does not match")

# Validation runs on the event loop, which every client shares: each case must come back within the
# budget, so validating costs time linear in the argument (uniqueItems over items that do not sort).
_COST: tuple[EscapeCase, ...] = (
    # One large invalid argument: refusing it must not hold the event loop.
    _case(
        "validation-large-invalid-argument",
        _tags("[0] * 87000"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-mixed-types",
        _tags(f"[0, 'a'] + [[i] for i in {_numbers(6000)}]"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-deep-arrays",
        _tags(f"[0, 'a'] + [[[[[i]]]] for i in {_numbers(4000)}]"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-objects",
        _tags(f"[{{'k': i, 'v': str(i)}} for i in {_numbers(4000)}]"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-objects-in-both-key-orders",
        _tags(f"[{{'a': i, 'b': 0}} if i % 2 else {{'b': 0, 'a': i}} for i in {_numbers(6000)}]"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-true-among-numbers",
        _tags(f"[True] + {_numbers(8000)}"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    _case(
        "validation-unique-items-float-among-strings",
        _tags(f"[1.0] + [str(i) for i in {_numbers(12000)}]"),
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    # Guard: a large call that passes every check is answered. It checks every item, the slowest path,
    # so it gets a clock no load can beat: the cases above are what time the checks.
    _case(
        "validation-unique-items-many-distinct-tags",
        _tags(f"[f'k:{{i}}' for i in {_numbers(5000)}]"),
        _quickly(ok=True),
        needs=_large,
        limits=roomy_clock,
    ),
    # Naming one error must not rank every error of a large argument on the event loop...
    _case(
        "validation-many-labels-failing-the-policy-pattern",
        "tools.probe.label_count(labels=['0'] * 50000)",
        _quickly("ToolError", "does not match"),
        needs=_large,
    ),
    # ...nor list every error of a failing anyOf branch before yielding one, even for is_valid.
    _case(
        "validation-large-invalid-argument-under-any-of",
        "tools.probe.label_count(labels=[0] * 87000)",
        _quickly("ToolError", "invalid arguments"),
        needs=_large,
    ),
    # A team's unanchored `[a-z]+:[a-z0-9]+` on a long text: a backtracking matcher tries every start.
    _case(
        "validation-unanchored-pattern-long-tag",
        _tags("['a' * 100_000]"),
        _quickly("ToolError", "does not match"),
        needs=_large,
    ),
    _case(
        "validation-unanchored-pattern-many-long-tags",
        _tags("[chr(97 + i) * 20_000 for i in range(10)]"),
        _quickly("ToolError", "does not match"),
        needs=_large,
    ),
)

# Duplicates that jsonschema's sorted path missed: Python's `1 == True` placed them apart.
_EQUALITY: tuple[EscapeCase, ...] = (
    _case(
        "validation-unique-items-true-between-ones", _tags("[[1], [True], [1]]"), _NON_UNIQUE, needs=_ONE_CALL
    ),
    _case(
        "validation-unique-items-one-and-one-point-zero",
        _tags("[[1], [True], [1.0]]"),
        _NON_UNIQUE,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-unique-items-key-order-with-true-between",
        _tags("[[{'a': 1, 'b': 2}], [{'a': True, 'b': 2}], [{'b': 2, 'a': 1}]]"),
        _NON_UNIQUE,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-unique-items-nested-one-point-zero",
        _tags("[[[0, [1]]], [[False, [1]]], [[0.0, [1.0]]]]"),
        _NON_UNIQUE,
        needs=_ONE_CALL,
    ),
)

# `^/srv/safe/.*$` holds only for normalised paths: every way back out of the prefix is refused.
_PATHS: tuple[EscapeCase, ...] = (
    _case("validation-path-parent", _read("/srv/safe/../private/key"), _NOT_NORMALISED, needs=_ONE_CALL),
    _case("validation-path-parent-at-the-end", _read("/srv/safe/.."), _NOT_NORMALISED, needs=_ONE_CALL),
    _case("validation-path-dot", _read("/srv/safe/./key"), _NOT_NORMALISED, needs=_ONE_CALL),
    _case(
        "validation-path-parent-percent-encoded",
        _read("/srv/safe/%2e%2e/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-percent-encoded-upper-case",
        _read("/srv/safe/%2E%2E/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-half-encoded",
        _read("/srv/safe/.%2E/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-double-encoded",
        _read("/srv/safe/%252e%252e/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-overlong-utf8",
        _read("/srv/safe/%c0%ae%c0%ae/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-encoded-separator",
        _read("/srv/safe/..%2fprivate"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-with-a-path-parameter",
        _read("/srv/safe/..;/private"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-parent-before-a-query", _read("/srv/safe/..?x=1"), _NOT_NORMALISED, needs=_ONE_CALL
    ),
    _case(
        "validation-path-parent-backslash", _read("/srv/safe/..\\private"), _NOT_NORMALISED, needs=_ONE_CALL
    ),
    _case(
        "validation-path-parent-encoded-backslash",
        _read("/srv/safe/..%5Cprivate"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case("validation-path-double-slash", _read("/srv/safe//etc/passwd"), _NOT_NORMALISED, needs=_ONE_CALL),
    _case(
        "validation-path-slash-backslash",
        _read("/srv/safe/\\\\host\\share"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    _case(
        "validation-path-double-slash-encoded",
        _read("/srv/safe/%2f%2fhost/share"),
        _NOT_NORMALISED,
        needs=_ONE_CALL,
    ),
    # Guards: a normalised path under the prefix, dots inside names and a dotfile still pass.
    _case(
        "validation-path-normalised-passes",
        _read("/srv/safe/notes/a..b.c/.profile"),
        value_is({"result": "read /srv/safe/notes/a..b.c/.profile"}),
        needs=_ONE_CALL,
    ),
)

# ECMA-262's `.` matches no line terminator: `\r`, U+2028 and U+2029 (Python's `.` matched them).
_LINES: tuple[EscapeCase, ...] = (
    _case("validation-dot-carriage-return", _read("/srv/safe/key\r/etc/passwd"), _NO_MATCH, needs=_ONE_CALL),
    _case("validation-dot-line-separator", _read("/srv/safe/key\u2028x"), _NO_MATCH, needs=_ONE_CALL),
    _case("validation-dot-paragraph-separator", _read("/srv/safe/key\u2029x"), _NO_MATCH, needs=_ONE_CALL),
    _case("validation-dot-carriage-return-at-the-end", _read("/srv/safe/key\r"), _NO_MATCH, needs=_ONE_CALL),
    # Guard: `\n` was refused before too (Python's `.` skips only `\n`); it must stay refused.
    _case("validation-dot-newline", _read("/srv/safe/key\n/etc/passwd"), _NO_MATCH, needs=_ONE_CALL),
    _case("validation-dot-plus-carriage-return", _tags("['env:prod\\r']"), _NO_MATCH, needs=_ONE_CALL),
    _case("validation-dot-plus-line-separator", _tags("['env:prod\\u2028x']"), _NO_MATCH, needs=_ONE_CALL),
    _case(
        "validation-dot-plus-paragraph-separator", _tags("['env:prod\\u2029x']"), _NO_MATCH, needs=_ONE_CALL
    ),
    # Guard: a tag on one line, non-ASCII included, still passes.
    _case(
        "validation-dot-plus-one-line-passes",
        _tags("['env:prod', 'ort:köln']"),
        value_is({"result": 2}),
        needs=_ONE_CALL,
    ),
)

CASES: tuple[EscapeCase, ...] = (*_COST, *_EQUALITY, *_PATHS, *_LINES)
