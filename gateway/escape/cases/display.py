"""What people read: approval prompts and the audit table, which argument text must not reshape.

The suite's policy asks for approval of `probe.write_file`, `probe.write_note` and
`probe.create_entities`; the suite's approver declines everything and keeps the prompt it was shown.
Each case then checks the prompt (or the audit table's rows for the run) as a person would read it:
the decisive argument is there, nothing but the gateway's own text starts a line, and no character
reorders or erases what is shown.
"""

from __future__ import annotations

from gateway.escape.cases._model import EscapeCase, Expect, Seen, SeenCheck, case_maker, needs_tool_calls

__all__ = ["CASES"]

_case = case_maker("display", "gateway")
_DECLINED = Expect(("ToolError",), says="declined", what="the call is declined by the suite's approver")
_REFUSED = Expect(("ToolError",), what="any refusal; the audit row is what is checked")
# What argument text may never put into a prompt or a table row as itself.
_RESHAPING = ("\n", "\r", "\u2028", "\u2029", "\u202e", "\u202d", "\u2066", "\u200b", "\x1b", "\x08", "\x85")
_FAKE = "Allow this call? yes"


def _one_prompt(check: SeenCheck) -> SeenCheck:
    def judged(seen: Seen) -> str | None:
        if len(seen.prompts) != 1:
            return f"expected one approval prompt, saw {len(seen.prompts)}"
        return check(seen)

    return judged


def _shows(*needles: str) -> SeenCheck:
    def check(seen: Seen) -> str | None:
        missing = [needle for needle in needles if needle not in seen.prompts[0]]
        return f"the prompt does not show {missing}" if missing else None

    return _one_prompt(check)


def _unforged_prompt(seen: Seen) -> str | None:
    prompt = seen.prompts[0]
    lines = prompt.split("\n")
    if lines[-1] != "Allow this call?" or sum(line.startswith("Allow this call?") for line in lines) != 1:
        return "argument text added a line that reads like the gateway's own question"
    raw = [repr(char) for char in _RESHAPING if char != "\n" and char in prompt]
    if raw:
        return f"the prompt shows reshaping characters as themselves: {raw}"
    if any(line and not line.startswith(("A code-mode snippet", "  ", "Allow this call?")) for line in lines):
        return "a line of the prompt is not the gateway's"
    return None


def _one_audit_row_per_call(seen: Seen) -> str | None:
    rows = [row for row in seen.audit_rows if "tool_call" in row]
    if len(rows) != 1:
        return f"expected one audit row for the one call, saw {len(rows)}: {rows}"
    raw = [repr(char) for char in _RESHAPING if any(char in row for row in seen.audit_rows)]
    if raw:
        return f"the audit table shows reshaping characters as themselves: {raw}"
    if any(_FAKE in row and "tool_call" not in row for row in seen.audit_rows):
        return "a forged row appears in the audit table"
    return None


CASES: tuple[EscapeCase, ...] = (
    # A prompt cut to its limit after sorting keys would drop `path`: what the call touches is shown.
    _case(
        "display-prompt-decisive-argument-after-a-long-one",
        "tools.probe.write_file(content='A' * 5000, path='.ssh/authorized_keys')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_shows('path: ".ssh/authorized_keys"', "(cut: 5,002 characters in all)"),
    ),
    _case(
        "display-prompt-padded-first-entity-hides-the-second",
        "tools.probe.create_entities(entities=[{'name': 'pad' * 1000, 'kind': 'note'}, "
        "{'name': 'root', 'kind': 'admin'}])",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_shows('entities[1].name: "root"', 'entities[1].kind: "admin"'),
    ),
    _case(
        "display-prompt-many-padded-arguments-are-named",
        "tools.probe.write_file(content='A' * 3000, path='/etc/' + 'x' * 3000)",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_shows("content:", "path:"),
    ),
    # Raw U+2028, U+202E and friends in an argument must not render as lines of the prompt.
    _case(
        "display-prompt-line-separator-fakes-a-line",
        f"tools.probe.write_note(name='n', text='ok\\u2028{_FAKE}')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_one_prompt(_unforged_prompt),
    ),
    _case(
        "display-prompt-newline-and-carriage-return",
        f"tools.probe.write_note(name='n\\r{_FAKE}', text='a\\n{_FAKE}\\n')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_one_prompt(_unforged_prompt),
    ),
    _case(
        "display-prompt-bidi-override-reorders-text",
        "tools.probe.write_note(name='\\u202egnp.txt', text='\\u2066hidden\\u2069')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_one_prompt(_unforged_prompt),
    ),
    _case(
        "display-prompt-terminal-escape-erases-a-line",
        "tools.probe.write_note(name='n', text='\\x1b[1A\\x1b[2Kfine\\x08\\x08')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_one_prompt(_unforged_prompt),
    ),
    _case(
        "display-prompt-next-line-and-zero-width",
        f"tools.probe.write_note(name='\\u200bn', text='x\\x85{_FAKE}')",
        _DECLINED,
        needs=needs_tool_calls(1),
        sees=_one_prompt(_unforged_prompt),
    ),
    # A tool name with a newline and an ANSI erase must not forge a row of the audit table.
    _case(
        "display-audit-row-forged-through-a-tool-name",
        # Names built at run time: a literal one is refused before the run, with no call to audit.
        "name = 'x.y\\n2099-01-01T00:00:00.000Z  tool_call  deadbeef   memory.delete_entities  "
        "ok (approved)\\x1b[2K'\ncall_tool(name)",
        _REFUSED,
        needs=needs_tool_calls(1),
        sees=_one_audit_row_per_call,
    ),
    _case(
        "display-audit-row-line-separator-in-a-tool-name",
        f"name = 'x.y\\u2028{_FAKE}\\u202e'\ncall_tool(name)",
        _REFUSED,
        needs=needs_tool_calls(1),
        sees=_one_audit_row_per_call,
    ),
)
