"""Malformed calls straight through the one import, `wit_world.imports.host.call(name, args_json)`.

A refusal comes back as the bindings' `Err`, which the snippet may catch; a limit ends the
execution. Whatever arrives, the host must answer it, not fail on it.
"""

from __future__ import annotations

from gateway.escape.cases._model import (
    HOST_IMPORT,
    EscapeCase,
    Expect,
    case_maker,
    crash,
    limit,
    needs_tool_calls,
    refused,
    succeeds,
    within_budget,
)

__all__ = ["CASES"]

_case = case_maker("host-calls")
_ONE = needs_tool_calls(1)
_NOT_JSON = refused("Err", "not valid JSON")
_NOT_OBJECT = refused("Err", "must be a JSON object")
_BAD_SLEEP = refused("Err", "non-negative")
_NOT_A_NUMBER = refused("Err", "is not a JSON number")
_REFUSED = refused("Err")  # any refusal the snippet can catch
_FLOOD_ENDS = limit("WallTimeExceeded", "FuelExhausted", check=within_budget, what="ended within the budget")


def _call(name: str, args: str) -> str:
    return HOST_IMPORT + f"host.call({name}, {args})"


# About 12 MB of JSON a tool call's arguments could never be: a list of 6 million numbers, which the
# host took 4 s and 300 MB to parse (60 MB: 12 s, 800 MB) before it measured the arguments.
_FAR_PAST = '\'{"name": "probe.echo", "arguments": {"a": [\' + \'0,\' * 6_000_000 + \'0]}}\''
_UNPARSED = "the host refuses it by its size, before parsing it"
_PAST_SERVICE_CAP = refused("Err", "1,048,576-byte cap")


CASES: tuple[EscapeCase, ...] = (
    _case("host-bad-json", _call("'probe.echo'", "'{not json'"), _NOT_JSON),
    _case("host-empty-args", _call("'probe.echo'", "''"), _NOT_JSON),
    _case("host-array-args", _call("'probe.echo'", "'[1]'"), _NOT_OBJECT),
    _case("host-null-args", _call("'probe.echo'", "'null'"), _NOT_OBJECT),
    _case("host-number-args", _call("'probe.echo'", "'1'"), _NOT_OBJECT),
    _case("host-string-args", _call("'probe.echo'", "'\"x\"'"), _NOT_OBJECT),
    _case("host-huge-int-args", _call("'probe.echo'", "'{\"a\": 1' + '0' * 5000 + '}'"), _NOT_JSON),
    # Infinity and NaN are no JSON numbers: a child must not receive null in their place.
    _case("host-infinity-args", _call("'probe.echo'", "'{\"a\": 1e999}'"), _NOT_A_NUMBER),
    _case("host-infinity-literal-args", _call("'probe.echo'", "'{\"a\": Infinity}'"), _NOT_A_NUMBER),
    _case("host-nan-literal-args", _call("'probe.echo'", '\'{"a": [1, {"b": NaN}]}\''), _NOT_A_NUMBER),
    _case("host-negative-infinity-args", _call("'probe.echo'", "'{\"a\": -1e400}'"), _NOT_A_NUMBER),
    _case(
        "host-infinity-through-the-tool-proxy",
        "tools.probe.echo(a=float('inf'))",
        refused("TypeError", "must be JSON values"),
    ),
    # Deep nesting is valid JSON that the host's own parser cannot take: a refusal, not a host failure.
    _case("host-deeply-nested-args", _call("'probe.echo'", "'[' * 5000 + ']' * 5000"), _REFUSED),
    _case("host-deeply-nested-unclosed-args", _call("'probe.echo'", "'[' * 200000"), _REFUSED),
    _case("host-huge-name", _call("'x' * 10**6", "'{}'"), refused("Err", "character cap")),
    _case("host-unknown-service", _call("'@exec'", "'{}'"), refused("Err", "unknown host service")),
    _case(
        "host-unknown-service-huge-name",
        _call("'@' + 'x' * 10**6", "'{}'"),
        Expect(
            ("Err",),
            "unknown host service",
            check=lambda r, _: r.error is not None and len(r.error.message) < 2000,
            what="the name is cut in the message",
        ),
    ),
    _case("host-service-name-case", _call("'@CLOCK'", "'{}'"), refused("Err", "unknown host service")),
    _case("host-name-nul", _call("'probe.echo\\x00'", "'{}'"), refused("Err", "unknown tool"), needs=_ONE),
    _case(
        "host-name-newline",
        _call("'probe.echo\\nERROR forged log line'", "'{}'"),
        refused("Err", "unknown tool"),
        needs=_ONE,
    ),
    _case("host-name-unicode", _call("'probé.ëcho🙂'", "'{}'"), refused("Err", "unknown tool"), needs=_ONE),
    _case("host-name-empty", _call("''", "'{}'"), refused("Err", "unknown tool"), needs=_ONE),
    # Values the bindings cannot lower: the guest runtime traps before anything reaches the host.
    _case("host-name-lone-surrogate", _call("'\\ud800'", "'{}'"), crash()),
    _case("host-args-lone-surrogate", _call("'probe.echo'", '\'{"a": "\\ud800"}\''), crash()),
    _case("host-name-bytes", _call("b'probe.echo'", "'{}'"), crash()),
    _case("host-name-none", _call("None", "None"), crash()),
    _case("host-name-int", _call("1", "2"), crash()),
    _case(
        "host-missing-argument", HOST_IMPORT + "host.call('probe.echo')", refused("TypeError", "args_json")
    ),
    _case("host-sleep-bad-json", _call("'@sleep'", "'{'"), _NOT_JSON),
    _case("host-sleep-string-payload", _call("'@sleep'", "'\"x\"'"), _BAD_SLEEP),
    _case("host-sleep-nan", _call("'@sleep'", "'{\"seconds\": NaN}'"), _NOT_A_NUMBER),
    _case("host-sleep-infinity", _call("'@sleep'", "'{\"seconds\": Infinity}'"), _NOT_A_NUMBER),
    _case("host-sleep-overflowing-float", _call("'@sleep'", "'{\"seconds\": 1e400}'"), _NOT_A_NUMBER),
    _case("host-sleep-negative", _call("'@sleep'", "'{\"seconds\": -1}'"), _BAD_SLEEP),
    _case("host-sleep-string-seconds", _call("'@sleep'", '\'{"seconds": "1"}\''), _BAD_SLEEP),
    _case(
        "host-sleep-huge-int",
        _call("'@sleep'", "'{\"seconds\": 1' + '0' * 400 + '}'"),
        Expect(("Err", "WallTimeExceeded")),
    ),
    _case("host-sleep-deeply-nested", _call("'@sleep'", "'[' * 5000"), _REFUSED),
    _case(
        "host-sleep-past-budget",
        lambda lim: _call("'@sleep'", f"'{{\"seconds\": {lim.timeout_seconds + 0.5}}}'"),
        limit("WallTimeExceeded"),
    ),
    _case(
        "host-clock-ignores-junk",
        _call("'@clock'", "'junk'"),
        succeeds(lambda r, _: "time_ns" in str(r.value), "the clock answers"),
    ),
    _case(
        "host-refused-call-flood",
        HOST_IMPORT + "big = '[' + '1,' * 120000 + '1]'\nwhile True:\n    try:\n"
        "        host.call('probe.echo', big)\n    except Exception:\n        pass",
        _FLOOD_ENDS,
    ),
    # Every host service measures what it was sent before it parses it.
    _case(
        "host-started-call-far-past-the-arguments-cap",
        _call("'@start'", _FAR_PAST),
        limit("ToolPayloadTooLarge", check=within_budget, what=_UNPARSED),
        needs=_ONE,
    ),
    _case(
        "host-show-far-past-the-shown-bytes-cap",
        _call("'@show'", _FAR_PAST),
        limit("ShownTooLarge", check=within_budget, what=_UNPARSED),
    ),
    *(
        _case(f"host-{service}-far-past-its-cap", _call(f"'@{service}'", _FAR_PAST), _PAST_SERVICE_CAP)
        for service in ("sleep", "wait", "cancel", "resources")
    ),
    _case("host-clock-flood", HOST_IMPORT + "while True:\n    host.call('@clock', '{}')", _FLOOD_ENDS),
    _case("host-sleep-zero-flood", "import time\nwhile True:\n    time.sleep(0)", _FLOOD_ENDS),
)
