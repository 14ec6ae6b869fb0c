"""Redaction without an oracle: secrets of every type and path, short ones included, through a Gateway.

The probe's environment holds a long token (PROBE_TOKEN), a four-digit PIN (PROBE_PIN) and, like every
child's, the gateway's HTTPS_PROXY with a password in it. A snippet must never see any of them, in any
type or encoding, and must never learn where a `[REDACTED:...]` label would have landed in text it
chose: that place would give a short secret away. A call carrying a secret ends the run; an output
holding a short secret is withheld whole.
"""

from __future__ import annotations

import json

from gateway.escape.cases._model import (
    HOST_IMPORT,
    EscapeCase,
    Expect,
    Seen,
    case_maker,
    needs_tool_calls,
    succeeds,
)
from gateway.escape.cases._probe import PROBE_PIN, PROBE_PROXY_PASSWORD, PROBE_SECRET
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("redaction", "gateway")
_SECRETS = (PROBE_SECRET, PROBE_PIN, PROBE_PROXY_PASSWORD)
_CANDIDATES = (
    "' '.join(f'{i:04d}' for i in range(3000, 6000))"  # the PIN among 3,000 guesses, within the caps
)
_NEAR = "' '.join(f'{i:04d}' for i in range(4700, 4900))"  # holds the PIN, short enough for any cap


def _seen(result: ExecutionResult) -> str:
    parts = [result.value, result.value_repr, result.stdout, result.stderr]
    if result.error is not None:
        parts += [result.error.message, result.error.traceback]
    parts += [call.error for call in result.tool_calls]
    return json.dumps(parts, ensure_ascii=False)


def _forms(secret: str) -> list[str]:
    return [
        secret,
        secret[::-1],
        " ".join(secret),
        secret.upper(),
        str(int(secret)) if secret.isdigit() else secret,
    ]


def _nothing_leaks(result: ExecutionResult, _limits: SandboxLimits) -> bool:
    seen = _seen(result)
    return not any(form in seen for secret in _SECRETS for form in _forms(secret))


def _no_pin_place(result: ExecutionResult, limits: SandboxLimits) -> bool:
    """No secret, and no position of a label among candidates: neither a redacted list nor the index."""
    seen = _seen(result)
    index_told = str(int(PROBE_PIN)) in seen or str(int(PROBE_PIN) - 4700) in seen
    return _nothing_leaks(result, limits) and "[REDACTED" not in seen and not index_told


def _overview_redacted(seen: Seen) -> str | None:
    if "broken (failed" not in seen.overview:
        return "search_docs does not show the failed child"
    if any(form in seen.overview for secret in _SECRETS for form in _forms(secret)):
        return "search_docs shows a failed child's secret"
    return None if "[REDACTED:" in seen.overview else "search_docs lost the child's own explanation"


_ENDED = Expect(
    ("SecretInArguments",),
    says="keeps from snippets and tools",
    check=_no_pin_place,
    what="the run ends at the call, telling nothing of where the secret was",
)
_WITHHELD = succeeds(_no_pin_place, "the output holding a short secret is withheld whole")


def _index_of_label(call: str) -> str:
    """Snippet: make a call echo the candidates back, then find where the label landed."""
    return (
        f"r = json.dumps({call})\n"
        "words = r.replace('\"', ' ').split()\n"
        "[i for i, w in enumerate(words) if 'REDACTED' in w]"
    )


CASES: tuple[EscapeCase, ...] = (
    # Proxy variables, with credentials, reach every child: what a child echoes of them is redacted.
    _case(
        "redaction-proxy-password-from-a-child",
        "tools.probe.reveal(name='HTTPS_PROXY')",
        succeeds(_nothing_leaks, "the proxy's password comes back redacted"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-proxy-password-transformed",
        "m = str(tools.probe.reveal(name='HTTPS_PROXY'))\n[m[::-1], m.upper(), ' '.join(m)]",
        succeeds(_nothing_leaks, "no transformed form of the password comes out"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-proxy-password-in-a-child-error",
        "tools.probe.reveal_in_error(name='HTTPS_PROXY')",
        Expect(("ToolError",), check=_nothing_leaks, what="the error reaches the snippet redacted"),
        needs=needs_tool_calls(1),
    ),
    # A failed child's stderr, quoted in its status, reaches search_docs redacted.
    _case(
        "redaction-failed-childs-stderr-in-search-docs",
        "tools.broken.anything()",
        Expect(
            ("ToolError",), says="REDACTED", check=_nothing_leaks, what="the child's stderr arrives redacted"
        ),
        needs=needs_tool_calls(1),
        sees=_overview_redacted,
    ),
    _case(
        "redaction-failed-childs-stderr-transformed",
        "try:\n    tools.broken.anything()\nexcept ToolError as e:\n    m = str(e)\n[m[::-1], m.upper()]",
        succeeds(_nothing_leaks, "no transformed form of the token comes out"),
        needs=needs_tool_calls(1),
    ),
    # A numeric secret answered as a bare number is an int, which redaction must not skip.
    _case(
        "redaction-numeric-secret-as-a-number",
        "v = tools.probe.reveal_number(name='PROBE_PIN')\nprint(str(v)[::-1])\nv",
        succeeds(_nothing_leaks, "the number is redacted before the snippet sees it"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-numeric-secret-arithmetic",
        "v = tools.probe.reveal_number(name='PROBE_PIN')['result']\n"
        "[v + 1, v * 2] if isinstance(v, int) else v",
        succeeds(
            lambda r, limits: _nothing_leaks(r, limits) and str(int(PROBE_PIN) + 1) not in _seen(r),
            "no arithmetic on the real number is possible",
        ),
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-numeric-secret-as-text",
        "tools.probe.reveal(name='PROBE_PIN')",
        succeeds(_nothing_leaks, "the PIN as text is redacted too"),
        needs=needs_tool_calls(1),
    ),
    # Where the label lands in an echo of candidates must not give a short secret away.
    _case(
        "redaction-oracle-echoed-candidates",
        "import json\n" + _index_of_label(f"tools.probe.echo(text={_CANDIDATES})"),
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-a-childs-error",
        "import json\ntry:\n    tools.probe.echo_in_error(text=" + _NEAR + ")\nexcept ToolError as e:\n"
        "    r = str(e)\n[i for i, w in enumerate(r.split()) if 'REDACTED' in w]",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-a-constraint-error",
        "try:\n    tools.probe.read_note(name=" + _NEAR + ")\nexcept ToolError as e:\n    r = str(e)\n"
        "[i for i, w in enumerate(r.split()) if 'REDACTED' in w]",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-a-schema-error",
        "try:\n    tools.probe.reveal_number(name=[" + _NEAR + "])\nexcept ToolError as e:\n    r = str(e)\n"
        "[i for i, w in enumerate(r.split()) if 'REDACTED' in w]",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-a-tool-name",
        "name = 'probe.x' + '_'.join(f'{i:04d}' for i in range(4800, 4840))\n"
        "try:\n    call_tool(name)\nexcept ToolError as e:\n    r = str(e)\nr.find('REDACTED')",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-as-an-argument-key",
        "try:\n    tools.probe.echo(**{f'k{i:04d}': 1 for i in range(4700, 4900)})\nexcept ToolError as e:\n"
        "    r = str(e)\nr.find('REDACTED')",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-base64-candidates",
        "import base64\ncands = [base64.b64encode(f'{i:04d}'.encode()).decode() for i in range(4700, 4900)]\n"
        "tools.probe.echo(text=' '.join(cands))",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-url-encoded-candidate",
        "tools.probe.echo(text='/pin/%34%38%32%31'.replace('%34%38%32%31', '4821'))",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-long-secret-passed-to-a-tool",
        f"tools.probe.echo(text={PROBE_SECRET!r}[::-1][::-1])",
        Expect(("SecretInArguments",), check=_nothing_leaks, what="the run ends; the secret is not echoed"),
        needs=needs_tool_calls(1),
    ),
    # The check of a snippet's tool calls before it runs quoted the names in its findings, redacted in
    # place: shown, or read by the snippet asking the host itself, the label's place told the PIN.
    _case(
        "redaction-oracle-candidates-in-a-checked-call-before-the-run",
        "tools.probe.x" + "_".join(str(i) for i in range(4800, 4850)) + "()",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-a-check-the-snippet-asks-for",
        HOST_IMPORT + "import json\nname = 'probe.x' + '_'.join(str(i) for i in range(4800, 4850))\n"
        "record = {'line': 1, 'tool': name, 'positional': 0, 'star_args': False, 'keywords': [],\n"
        "          'star_kwargs': False, 'literals': {}}\n"
        "m = json.loads(host.call('@precheck', json.dumps({'calls': [record]})))['findings'][0]['message']\n"
        "(m.find('REDACTED') - m.find('4800')) // 5",
        _ENDED,
        needs=needs_tool_calls(1),
    ),
    _case(
        "redaction-oracle-candidates-in-discovery-questions",
        "c = 'x' + '_'.join(str(i) for i in range(4800, 4850))\nout = []\n"
        "for ask in (lambda: search(c), lambda: search('q', server=c), lambda: help(getattr(tools, c)),\n"
        "            lambda: dir(getattr(tools, c)), lambda: help(getattr(tools.probe, c))):\n"
        "    try:\n        out.append(str(ask()).find('REDACTED'))\n"
        "    except ToolError as e:\n        out.append(str(e).find('REDACTED'))\nout",
        succeeds(_no_pin_place, "no answer redacts the question in place"),
        needs=needs_tool_calls(1),
    ),
    # The same oracle without any tool: the snippet's own outputs, read by the model.
    _case(
        "redaction-oracle-membership-across-outputs",
        "import sys\nprint(' '.join(f'{i:04d}' for i in range(4800, 4900)))\n"
        "print(' '.join(f'{i:04d}' for i in range(0, 100)), file=sys.stderr)\n"
        "' '.join(f'{i:04d}' for i in range(5000, 5100))",
        succeeds(
            lambda r, limits: _no_pin_place(r, limits) and "0099" not in _seen(r) and "5099" not in _seen(r),
            "every output is withheld, not only the one holding the PIN, which told where it was",
        ),
    ),
    _case("redaction-oracle-candidates-printed", f"print({_CANDIDATES})", _WITHHELD),
    _case("redaction-oracle-candidates-as-the-value", _NEAR, _WITHHELD),
    _case(
        "redaction-oracle-candidates-on-stderr",
        f"import sys\nprint({_NEAR}, file=sys.stderr)",
        _WITHHELD,
    ),
    _case(
        "redaction-oracle-candidates-in-an-exception",
        f"raise ValueError({_NEAR})",
        Expect(("ValueError",), check=_no_pin_place, what="the message and traceback are withheld whole"),
    ),
    _case(
        "redaction-short-secret-alone-in-output",
        "print('4821')",
        succeeds(_no_pin_place, "even a lone guess is withheld, not redacted in place"),
    ),
    _case(
        "redaction-long-secret-in-output-is-redacted-in-place",
        f"print('token:', {PROBE_SECRET!r})",
        succeeds(
            lambda r, limits: _nothing_leaks(r, limits) and "token: [REDACTED" in r.stdout,
            "a long secret is replaced in place: its place tells nothing",
        ),
    ),
)
