"""Discovery from inside a snippet: `search()`, `help()` and `dir()` on tools, through a whole Gateway.

The snippet asks the host through the one import (`@search`, `@docs`), and the host answers from the
policy-filtered catalog the run started with. These cases try to make it tell more than the policy
lets the model see (the hidden `probe.internal_admin`, by any route and spelling), to flood it (a
loop of questions, costly questions, answers that outgrow a paused run's state), to make it fail on
malformed questions, and to use what it tells to get past the policy (a denied tool it lists is
still denied). Without a catalog (a bare sandbox) every question is refused, saying why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import cast

from gateway.auth import Identity
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from gateway.escape.cases._model import (
    HOST_IMPORT,
    EscapeCase,
    Expect,
    Seen,
    case_maker,
    limit,
    needs_tool_calls,
    refused,
    roomy_clock,
    succeeds,
    value_is,
    within_budget,
)
from gateway.escape.cases._probe import PROBE_PIN, PROBE_PROXY_PASSWORD, PROBE_SECRET
from gateway.sandbox import MAX_DOCS_ARGS_BYTES, MAX_DOCS_QUERIES
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from guest._precheck import MAX_NAME_CHARS

__all__ = ["CASES"]

_case = case_maker("discovery", "gateway")
_bare = case_maker("discovery")  # a bare sandbox: no catalog behind it
_HIDDEN = "internal_admin"
_DENIED_NOTE = "denied by policy"
_CAP_SAYS = f"limited to {MAX_DOCS_QUERIES} per execution"
_SIZE_SAYS = f"{MAX_DOCS_ARGS_BYTES:,}-byte cap"
_BAD_LIMIT = refused("ToolError", "limit must be a whole number")
_NOT_OBJECT = refused("Err", "must be a JSON object")
_NO_CATALOG = "no catalog serves this sandbox"
_SECRETS = (PROBE_SECRET, PROBE_PIN, PROBE_PROXY_PASSWORD)

# A loop of questions to the cap needs fuel and time of its own: these leave it room, with margin.
_FLOOD_FUEL = 400_000_000
_FLOOD_SECONDS = 1.0


def _needs_room(limits: SandboxLimits) -> str | None:
    """Skip a flood of questions when the config's budget cannot finish it."""
    if limits.fuel < _FLOOD_FUEL:
        return f"needs {_FLOOD_FUEL:,} fuel; sandbox.fuel is {limits.fuel:,}"
    if limits.timeout_seconds < _FLOOD_SECONDS:
        return f"needs {_FLOOD_SECONDS:g} s; sandbox.timeout_seconds is {limits.timeout_seconds:g}"
    return None


def _room_and_calls(count: int) -> Callable[[SandboxLimits], str | None]:
    calls = needs_tool_calls(count)
    return lambda limits: _needs_room(limits) or calls(limits)


# One authenticated caller's call teaches the gateway its result's field names (`carol_review`);
# another caller's search(), help() and __doc__ must show that tool as never called.
_FIRST_CALLER, _SECOND_CALLER = Identity("probe-first-caller"), Identity("probe-second-caller")
_OTHER_CALLERS_VIEW = (
    "for tool in search('person record profile', limit=50):\n    print(tool.signature)\n"
    "print(tools.probe.profile.__doc__)\nhelp(tools.probe.profile)"
)


def _shows_only_its_own_shapes(first: ExecutionResult, second: ExecutionResult) -> bool:
    never_called = "probe.profile(*, name: str) -> Any"  # as every caller saw it before a call
    return first.error is None and second.stdout.count(never_called) == 3 and "carol" not in second.stdout


def _raw(service: str, args: str) -> str:
    """Snippet: one question straight through the import, past the guest's `search` and `help`."""
    return HOST_IMPORT + f"host.call({service}, {args})"


def _value(check: Callable[[object], bool], what: str) -> Expect:
    """The snippet succeeds and `check` holds on its value."""
    return succeeds(lambda r, _: check(r.value), what)


def _items(value: object, length: int | None = None) -> list[object]:
    """`value` as a list (of `length` items, if given); empty when it is anything else."""
    if not isinstance(value, list):
        return []
    items = cast("list[object]", value)
    return items if length is None or len(items) == length else []


def _mentions_hidden(value: object) -> bool:
    return _HIDDEN in json.dumps(value, ensure_ascii=False)


def _message(result: ExecutionResult) -> str:
    return result.error.message if result.error is not None else ""


def _nothing_about_hiding(message: str, asked: str) -> bool:
    """The refusal names the tool only where it quotes the question: no suggestion, no policy."""
    rest = message.replace(repr(asked), "")
    return _HIDDEN not in rest and "polic" not in rest.lower() and "hidden" not in rest.lower()


def _looks_unknown(asked: str) -> Expect:
    return Expect(
        ("ToolError", "Err"),
        "has no tool",
        check=lambda r, _: _nothing_about_hiding(_message(r), asked),
        what="refused as a tool that never existed: no suggestion of it, no policy named",
    )


def _forms(secret: str) -> list[str]:
    return [secret, secret[::-1], " ".join(secret), secret.upper()]


def _no_secret_but_explained(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    seen = json.dumps([result.value, result.stdout, _message(result)], ensure_ascii=False)
    leaked = any(form in seen for secret in _SECRETS for form in _forms(secret))
    return not leaked and "[REDACTED:" in seen


def _flood(call: str) -> str:
    """Snippet: ask with `call` until refused, leaving `n` (answered) and `last` (the refusal)."""
    return (
        "n, last = 0, None\nwhile n <= 1000:\n    try:\n"
        f"        {call}\n        n += 1\n    except ToolError as e:\n        last = e.message\n"
        "        break\n"
    )


def _capped(value: object) -> bool:
    """[answered, refusal, ...]: exactly the cap answered, then a refusal naming it."""
    items = _items(value)
    return len(items) >= 2 and items[0] == MAX_DOCS_QUERIES and _CAP_SAYS in str(items[1])


def _nothing_written_nor_shown(seen: Seen) -> str | None:
    if seen.notes:
        return f"a call the run never got approval for reached the probe: {seen.notes}"
    if seen.prompts:
        return f"the user was asked to approve a call the run could not resume: {seen.prompts}"
    return None


def _written_once(name: str, text: str) -> Callable[[Seen], str | None]:
    def check(seen: Seen) -> str | None:
        wanted = {name: (text,)}
        return None if dict(seen.notes) == wanted else f"expected the notes {wanted}, saw {seen.notes}"

    return check


# Every spelling of the hidden tool a snippet might try, straight through `@docs`.
_HIDDEN_SPELLINGS = (
    _HIDDEN,
    "internal-admin",
    "INTERNAL_ADMIN",
    "internalAdmin",
    f"{_HIDDEN} ",
    f"{_HIDDEN}\n",
    f"{_HIDDEN}\x00",
    f"probe.{_HIDDEN}",
    f"tools.probe.{_HIDDEN}",
)
_ASK_SPELLINGS = f"""
import json
out = []
for tool in {_HIDDEN_SPELLINGS!r}:
    try:
        out.append(['answered', tool, host.call('@docs', json.dumps({{'server': 'probe', 'tool': tool}}))])
    except Exception as e:
        out.append(['refused', tool, json.loads(str(e.value))['message']])
out
"""


def _every_spelling_refused(value: object) -> bool:
    answers = [_items(item, 3) for item in _items(value, len(_HIDDEN_SPELLINGS))]
    return bool(answers) and all(
        outcome == "refused"
        and "has no tool" in str(message)
        and _nothing_about_hiding(str(message), str(asked))
        for outcome, asked, message in answers
    )


_COMPARE_REFUSALS = f"""
import re
out = []
for name in ({_HIDDEN!r}, 'never_was_here'):
    for ask in (lambda: help(getattr(tools.probe, name)), lambda: getattr(tools.probe, name).__doc__):
        try:
            ask()
            out.append('answered')
        except ToolError as e:
            out.append(re.sub(r'Did you mean [^?]*[?]', '', e.message).replace(repr(name), '<name>'))
out
"""

_LISTINGS = """
names = dir(tools.probe)
by_server = [t.name for t in search(server='probe', limit=50)]
everything = [t.name for t in search(limit=50)]
[names, by_server, everything]
"""


def _listings_agree(value: object) -> bool:
    lists = [_items(item) for item in _items(value, 3)]
    if not lists:
        return False
    names, by_server, everything = lists
    listed = {f"probe.{name}" for name in names}
    return (
        not _mentions_hidden(value)
        and "delete_all" in names  # the listing is real: the denied tool is in it
        and set(by_server) == listed
        and listed <= set(everything)
    )


def _counted_as_listed(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    # "20 tools" where 19 are listed would betray the hidden one.
    return (
        isinstance(result.value, int)
        and f"probe (ready, {result.value} tools)" in result.stdout
        and "delete_all" in result.stdout
        and not _mentions_hidden([result.value, result.stdout])
    )


_SEARCHES_FOR_HIDDEN = f"""
names, texts = set(), set()
for q in ('admin internal', {_HIDDEN!r}, 'probe.{_HIDDEN}', 'tools.probe.{_HIDDEN}',
          'administrative tool the policy hides', 'internal admin tool'):
    for t in search(q, limit=50) + search(q, server='probe', limit=50):
        names.add(t.name)
        texts.update([t.signature, t.description, repr(t)])
[sorted(names), [text for text in texts if 'admin' in text.lower()]]
"""

_SPENT_ON_REFUSALS = f"""
sizes = []
for _ in range({MAX_DOCS_QUERIES}):
    try:
        search('x' * {DEFAULT_MAX_QUERY_CHARS + 1})
    except ToolError as e:
        sizes.append(e.message)
try:
    search('echo')
    last = 'answered'
except ToolError as e:
    last = e.message
[len(sizes), all('search.max_query_chars' in m for m in sizes), last]
"""

_MIXED_FLOOD = f"""
asks = [lambda: search('note'), lambda: dir(tools.probe), lambda: tools.probe.echo.__doc__,
        lambda: tools.__doc__, lambda: dir(tools)]
n, last = 0, None
for i in range({MAX_DOCS_QUERIES} + 50):
    try:
        asks[i % len(asks)]()
        n += 1
    except ToolError as e:
        last = e.message
[n, last]
"""

# One long word of random letters, as long as a query may be: the most spelling-correction work a
# question within the cap could once buy (every one-letter deletion of it was looked up).
_COSTLY_FLOOD = f"""
import random
word = ''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range({DEFAULT_MAX_QUERY_CHARS}))
while True:
    try:
        search(word, limit=50)
    except ToolError:
        pass
"""

_CONTROL_CHARS = (
    HOST_IMPORT + "import json\n"
    "host.call('@docs', json.dumps({'server': 'probe', 'tool': 'echo\\nERROR forged\\r\\x00\\x1b[31m'}))"
)

_UNKNOWN_SERVICES = """
import json
out = []
for name in ('@docs2', '@DOCS', '@Search', '@search ', '@docs\\x00', '@', '@@docs'):
    try:
        host.call(name, '{}')
        out.append([name, 'answered'])
    except Exception as e:
        out.append([name, json.loads(str(e.value))['message']])
out
"""


def _all_unknown_services(value: object) -> bool:
    answers = [_items(item, 2) for item in _items(value, 7)]
    return bool(answers) and all("unknown host service" in str(answer[1:]) for answer in answers)


_NO_CATALOG_ANYWHERE = """
import json
out = []
for ask in (lambda: search('echo'), lambda: dir(tools), lambda: dir(tools.probe),
            lambda: help(tools.probe.echo), lambda: tools.probe.echo.__doc__):
    try:
        ask()
        out.append('answered')
    except ToolError as e:
        out.append(e.message)
try:
    host.call('@docs', '{"server": "probe", "tool": "echo"}')
except Exception as e:
    out.append(json.loads(str(e.value))['message'])
[out, tools.probe.echo(n=1)]
"""


def _refused_without_catalog(value: object) -> bool:
    items = _items(value, 2)
    messages = _items(items[0], 6) if items else []
    return bool(messages) and all(_NO_CATALOG in str(m) for m in messages) and items[1] == {"n": 1}


CASES: tuple[EscapeCase, ...] = (
    # The hidden tool, by every route that lists or describes tools.
    _case(
        "discovery-hidden-never-searched",
        _SEARCHES_FOR_HIDDEN,
        _value(
            lambda v: _items(v, 2)[1:] == [[]] and not _mentions_hidden(v),
            "no search finds the hidden tool, by name or by its description",
        ),
    ),
    _case(
        "discovery-hidden-not-listed",
        _LISTINGS,
        _value(_listings_agree, "dir() and empty-query searches list the same tools, the hidden one not"),
    ),
    _case(
        "discovery-hidden-not-in-help",
        "help(tools)\nhelp(tools.probe)\nlen(dir(tools.probe))",
        succeeds(_counted_as_listed, "help() neither names nor counts the hidden tool"),
    ),
    _case("discovery-hidden-help-looks-unknown", f"help(tools.probe.{_HIDDEN})", _looks_unknown(_HIDDEN)),
    _case(
        "discovery-hidden-raw-docs-call",
        _raw("'@docs'", f'\'{{"server": "probe", "tool": "{_HIDDEN}"}}\''),
        _looks_unknown(_HIDDEN),
    ),
    _case(
        "discovery-hidden-same-as-never-existed",
        _COMPARE_REFUSALS,
        _value(
            lambda v: len({str(m) for m in _items(v, 4)}) == 1 and "answered" not in _items(v),
            "help() and __doc__ refuse the hidden tool exactly as a name that never existed",
        ),
    ),
    _case(
        "discovery-hidden-spellings",
        HOST_IMPORT + _ASK_SPELLINGS,
        _value(_every_spelling_refused, "no spelling reaches the hidden tool's docs or suggests it"),
    ),
    # Floods: a loop of questions ends at the cap, and the cap is per execution.
    _case(
        "discovery-docs-flood-capped",
        _flood("search('echo')") + "[n, last, tools.probe.echo(text='after')]",
        succeeds(
            lambda r, _: (
                _capped(r.value)
                and _items(r.value, 3)[2:] == [{"result": "after"}]
                and len(r.tool_calls) == 1  # questions are not tool calls, nor spend their quota
            ),
            f"exactly {MAX_DOCS_QUERIES} answered, then a refusal naming the cap; tool calls still work",
        ),
        then="len(search('echo'))",
        then_check=lambda _, second: second.ok,  # the cap is per execution
        needs=_room_and_calls(1),
    ),
    _case(
        "discovery-docs-flood-mixed",
        _MIXED_FLOOD,
        _value(_capped, "search(), dir(), help() and __doc__ share the one cap"),
        needs=_needs_room,
    ),
    _case(
        "discovery-refused-questions-count",
        _SPENT_ON_REFUSALS,
        _value(
            lambda v: _items(v, 3)[:2] == [MAX_DOCS_QUERIES, True] and _CAP_SAYS in str(_items(v)[2]),
            "oversized questions are refused and count toward the cap too",
        ),
        needs=_needs_room,
    ),
    _case(
        "discovery-costly-question-flood",
        _COSTLY_FLOOD,
        limit("WallTimeExceeded", "FuelExhausted", check=within_budget, what="ended within the budget"),
    ),
    _case(
        "discovery-docs-flood-before-an-approval",
        f"docs = [tools.probe.__doc__ for _ in range({MAX_DOCS_QUERIES})]\n"
        "tools.probe.write_note(name='discovery-state', text='never')",
        refused("ApprovalLimitExceeded", "approvals.max_state_bytes"),
        needs=_room_and_calls(1),
        sees=_nothing_written_nor_shown,
        approve=True,
        limits=roomy_clock,
    ),
    _case(
        "discovery-flood-across-approval-rounds",
        "def flood():\n"
        + "\n".join("    " + line for line in _flood("search('echo', limit=1)").splitlines())
        + "\n    return n\nfirst = flood()\n"
        "tools.probe.write_note(name='discovery-rounds', text='once')\n[first, flood()]",
        _value(
            lambda v: _items(v, 2)[:1] == [MAX_DOCS_QUERIES] and _items(v)[1] in range(MAX_DOCS_QUERIES + 1),
            "each round answers at most the cap; the replayed answers stay the same",
        ),
        needs=_room_and_calls(1),
        sees=_written_once("discovery-rounds", "once"),
        approve=True,
        # About the cap and the replay: a wall clock cutting a round short would leave no note.
        limits=roomy_clock,
    ),
    _case(
        "discovery-answers-replayed-on-resume",
        "a = [t.name for t in search('note', limit=3)]\n"
        "tools.probe.write_note(name='discovery-replayed', text='once')\n"
        "b = dir(tools.probe)\n[a, 'write_note' in b]",
        _value(
            lambda v: _items(v, 2)[1:] == [True] and "probe.write_note" in _items(_items(v)[0]),
            "the resumed round repeats the questions and goes on",
        ),
        needs=needs_tool_calls(1),
        sees=_written_once("discovery-replayed", "once"),
        approve=True,
        # About the cap and the replay: a wall clock cutting a round short would leave no note.
        limits=roomy_clock,
    ),
    # Oversized and malformed questions: refusals the snippet can catch, naming what was wrong.
    _case(
        "discovery-oversized-query",
        f"search('x' * {MAX_DOCS_ARGS_BYTES + 1})",
        refused("ToolError", _SIZE_SAYS),
    ),
    _case(
        "discovery-query-past-the-query-cap",
        f"search('x' * {DEFAULT_MAX_QUERY_CHARS + 1})",
        refused("ToolError", f"over search.max_query_chars ({DEFAULT_MAX_QUERY_CHARS:,})"),
        then=f"[len(search('echo')), len(search(' '.join(['qzxv' * 7] * {DEFAULT_MAX_QUERY_CHARS // 29})))]",
        then_check=lambda _, r: r.ok and len(_items(r.value, 2)) == 2 and _items(r.value)[0] != 0,
    ),
    _case(
        "discovery-server-name-past-the-name-cap",
        f"search('echo', server='p' * {MAX_NAME_CHARS + 1})",
        refused("ToolError", f"over the {MAX_NAME_CHARS}-character cap"),
    ),
    _case(
        "discovery-tool-name-past-the-name-cap",
        f"help(getattr(tools.probe, 'x' * {MAX_NAME_CHARS + 1}))",
        refused("ToolError", f"over the {MAX_NAME_CHARS}-character cap"),
    ),
    _case(
        "discovery-oversized-raw-docs",
        _raw("'@docs'", f'\'{{"server": "probe", "tool": "\' + \'x\' * {MAX_DOCS_ARGS_BYTES} + \'"}}\''),
        refused("Err", _SIZE_SAYS),
    ),
    _case("discovery-raw-array-payload", _raw("'@search'", "'[1]'"), _NOT_OBJECT),
    _case("discovery-raw-null-payload", _raw("'@docs'", "'null'"), _NOT_OBJECT),
    _case("discovery-raw-string-payload", _raw("'@search'", "'\"echo\"'"), _NOT_OBJECT),
    _case("discovery-raw-invalid-json", _raw("'@search'", "'{not json'"), refused("Err", "not valid JSON")),
    _case("discovery-raw-empty-payload", _raw("'@docs'", "''"), refused("Err", "not valid JSON")),
    _case(
        "discovery-raw-deeply-nested",
        _raw("'@search'", "'[' * 2000 + ']' * 2000"),  # within the size cap, past the host's recursion
        refused("Err", "nest deeper"),
    ),
    _case(
        "discovery-raw-deeply-nested-value",
        _raw("'@docs'", "'{\"server\": ' + '[' * 100 + ']' * 100 + '}'"),
        refused("Err", "nest deeper"),
    ),
    _case(
        "discovery-raw-nested-over-cap",
        _raw("'@docs'", "'[' * 200000"),
        refused("Err", _SIZE_SAYS),
    ),
    _case(
        "discovery-raw-nan-limit",
        _raw("'@search'", "'{\"limit\": NaN}'"),
        refused("Err", "not a JSON number"),
    ),
    _case(
        "discovery-raw-overflowing-limit",
        _raw("'@search'", "'{\"limit\": 1e999}'"),
        refused("Err", "not a JSON number"),
    ),
    _case("discovery-query-not-a-string", "search(1)", refused("ToolError", "query must be a string")),
    _case(
        "discovery-raw-query-a-list",
        _raw("'@search'", '\'{"query": ["echo"]}\''),
        refused("Err", "query must be a string"),
    ),
    _case("discovery-limit-bool", "search('echo', limit=True)", _BAD_LIMIT),
    _case("discovery-limit-zero", "search('echo', limit=0)", _BAD_LIMIT),
    _case("discovery-limit-negative", "search('echo', limit=-1)", _BAD_LIMIT),
    _case("discovery-limit-huge", "search('echo', limit=10**100)", _BAD_LIMIT),
    _case("discovery-limit-string", "search('echo', limit='5')", _BAD_LIMIT),
    _case("discovery-limit-float", "search('echo', limit=5.0)", _BAD_LIMIT),
    _case(
        "discovery-raw-limit-thousands-of-digits",
        _raw("'@search'", "'{\"limit\": 1' + '0' * 4000 + '}'"),
        refused("Err", "limit must be a whole number"),
    ),
    _case(
        "discovery-unknown-server",
        "search('echo', server='nope')",
        Expect(
            ("ToolError",),
            "Unknown server",
            check=lambda r, _: all(name in _message(r) for name in ("nope", "probe", "broken")),
            what="the message lists the known servers",
        ),
    ),
    _case(
        "discovery-unknown-server-help",
        "help(tools.nope)",
        Expect(
            ("ToolError",),
            "Unknown server",
            check=lambda r, _: "probe" in _message(r) and "broken" in _message(r),
            what="the message lists the known servers",
        ),
    ),
    _case(
        "discovery-server-not-a-string",
        _raw("'@docs'", "'{\"server\": 1}'"),
        refused("Err", "server must be a string"),
    ),
    _case(
        "discovery-tool-name-control-chars",
        _CONTROL_CHARS,
        Expect(
            ("Err",),
            "has no tool",
            check=lambda r, _: not any(c in _message(r) for c in "\n\r\x00\x1b"),
            what="the name is quoted escaped: no forged lines, no terminal escapes",
        ),
    ),
    _case(
        "discovery-unknown-services",
        HOST_IMPORT + _UNKNOWN_SERVICES,
        _value(_all_unknown_services, "only @search and @docs, spelled exactly, are discovery services"),
    ),
    # The denied tool: listed, marked, and still denied once found.
    _case(
        "discovery-denied-visible-but-marked",
        "found = [[t.name, t.access] for t in search('delete everything')]\n"
        "[found, 'delete_all' in dir(tools.probe)]",
        _value(
            lambda v: (
                _items(v, 2)[1:] == [True] and ["probe.delete_all", _DENIED_NOTE] in _items(_items(v)[0])
            ),
            "search() shows the denial next to the tool",
        ),
    ),
    _case(
        "discovery-denied-marked-in-help",
        "help(tools.probe)",
        succeeds(
            lambda r, _: any(
                "probe.delete_all(" in line and _DENIED_NOTE in line for line in r.stdout.splitlines()
            ),
            "help() on the server shows the denial on the tool's line",
        ),
    ),
    _case(
        "discovery-denied-found-then-called",
        "info = search('delete everything')[0]\ntools.probe.delete_all.__doc__\ncall_tool(info.name)",
        refused("ToolError", "denied by policy"),
        needs=needs_tool_calls(1),
    ),
    # A failed child's explanation in help(): redacted before the snippet can transform it.
    _case(
        "discovery-failed-child-docs-redacted",
        "m = tools.__doc__ + tools.broken.__doc__\n[m, m[::-1], m.upper(), ' '.join(m)]",
        succeeds(_no_secret_but_explained, "no form of the child's token; its explanation kept, redacted"),
    ),
    # A child that writes a credential into its own tool docs: redacted when the tools are listed,
    # so neither help(), __doc__ nor search() hands the snippet text it could transform.
    _case(
        "discovery-secret-in-tool-docs",
        "m = tools.probe.documented.__doc__ + repr(search('look a key up', server='probe'))\n"
        "m += ''.join(t.description for t in search('look a key up'))\n"
        "[m, m[::-1], m.upper(), ' '.join(m)]",
        succeeds(_no_secret_but_explained, "no form of the token from the tool's description or schema"),
    ),
    # A bare sandbox has no catalog: every question is refused, saying why; tool calls are unaffected.
    # The check of a snippet's calls before it runs (@precheck): the guest asks it once, by itself.
    _case(
        "discovery-precheck-forged-records",
        _raw("'@precheck'", '\'{"calls": [{"line": "one"}]}\''),
        refused("Err", "could not be read"),
    ),
    _case(
        "discovery-precheck-asked-twice",
        HOST_IMPORT + "host.call('@precheck', '{\"calls\": []}')\nhost.call('@precheck', '{\"calls\": []}')",
        refused("Err", "checked once"),
    ),
    _case(
        "discovery-precheck-over-its-cap",
        HOST_IMPORT + "import json\nhost.call('@precheck', json.dumps({'calls': ['x' * (2 << 20)]}))",
        refused("Err", "byte cap"),
    ),
    _case(
        "discovery-precheck-a-denied-tool-is-left-to-run-time",
        "try:\n    tools.probe.delete_all()\nexcept ToolError as e:\n    denied = e.kind\n"
        "[denied, tools.probe.echo(text='on')]",
        value_is(["PolicyDenied", {"result": "on"}]),
        needs=needs_tool_calls(2),
    ),
    _case(
        "discovery-another-callers-result-shapes",
        "tools.probe.profile(name='carol')",
        succeeds(),
        then=_OTHER_CALLERS_VIEW,
        then_check=_shows_only_its_own_shapes,
        caller=_FIRST_CALLER,
        then_caller=_SECOND_CALLER,
        needs=needs_tool_calls(1),
    ),
    _case(
        # A field seen with more kinds than a union holds is shaped `Any` (`{}`); a later answer without
        # that field must merge with it, not fail the call that the child already answered.
        "discovery-result-shape-poisoned-by-a-field-of-any-kind",
        "import json\n"
        "rows = [{'p': 1}, {'p': 's'}, {'p': None}, {'p': [1]}, {'p': {'k': 1}}]\n"
        "tools.probe.echo_json(text=json.dumps(rows))\n"
        "tools.probe.echo_json(text=json.dumps([{'q': 1}]))",
        value_is([{"q": 1}]),
        needs=needs_tool_calls(2),
    ),
    _bare(
        "discovery-no-catalog-search",
        "search('echo')",
        refused("ToolError", _NO_CATALOG),
    ),
    _bare(
        "discovery-no-catalog-anywhere",
        HOST_IMPORT + _NO_CATALOG_ANYWHERE,
        _value(_refused_without_catalog, "search(), dir(), help(), __doc__ and @docs all refused"),
        needs=needs_tool_calls(1),
    ),
)
