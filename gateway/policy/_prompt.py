"""The text a person reads before approving one tool call: the exact tool and arguments, unforgeable.

Argument text cannot reshape the prompt: every value is shown as JSON with control, separator and
format characters escaped (`gateway.shared._display.printable`), so it cannot start a line of its own or
reorder the text around it. Nothing decisive hides behind something long: the arguments are shown
shortest first (a path, a flag, a name before a body of text), each value is cut on its own with
its full length said, long lists show their first items and how many more there are, and when the
prompt is full the arguments left out are named.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

from gateway.shared import printable

__all__ = ["MAX_PROMPT_CHARS", "approval_prompt"]

MAX_PROMPT_CHARS = 2000
_MAX_VALUE_CHARS = 240
_MAX_ITEMS = 8
_MAX_DEPTH = 4


def _json(value: Any) -> str:
    return printable(json.dumps(value, ensure_ascii=False, default=str))


def _cut(text: str) -> str:
    if len(text) <= _MAX_VALUE_CHARS:
        return text
    return f"{text[:_MAX_VALUE_CHARS]}… (cut: {len(text):,} characters in all)"


def _lines(path: str, value: Any, depth: int = 0) -> Iterator[str]:
    """`path: value` lines for one argument; containers unfold a few levels, then show as JSON."""
    if isinstance(value, dict) and value and depth < _MAX_DEPTH:
        items = list(cast("dict[str, Any]", value).items())
        for key, item in items[:_MAX_ITEMS]:
            yield from _lines(f"{path}.{printable(key)}", item, depth + 1)
        if len(items) > _MAX_ITEMS:
            yield f"{path}: … and {len(items) - _MAX_ITEMS} more keys"
    elif isinstance(value, list) and value and depth < _MAX_DEPTH:
        items = cast("list[Any]", value)
        for index, item in enumerate(items[:_MAX_ITEMS]):
            yield from _lines(f"{path}[{index}]", item, depth + 1)
        if len(items) > _MAX_ITEMS:
            yield f"{path}: … and {len(items) - _MAX_ITEMS} more items ({len(items)} in all)"
    else:
        yield f"{path}: {_cut(_json(value))}"


def approval_prompt(tool: str, arguments: dict[str, Any]) -> str:
    """What the user is asked: which tool, with which arguments, and what was left out."""
    head = f"A code-mode snippet wants to call {printable(tool)} with these arguments:"
    budget = MAX_PROMPT_CHARS - len(head) - 40
    # Shortest first: the values that decide what a call does are usually the short ones.
    ordered = sorted(arguments.items(), key=lambda item: len(_json(item[1])))
    shown: list[str] = []
    left_out: list[str] = []
    for name, value in ordered:
        label = printable(name)
        lines = list(_lines(label, value))
        fitting = 0
        while fitting < len(lines) and len(lines[fitting]) + 3 <= budget:
            budget -= len(lines[fitting]) + 3
            fitting += 1
        if fitting == 0:
            left_out.append(label)
            continue
        shown += [f"  {line}" for line in lines[:fitting]]
        if fitting < len(lines):
            shown.append(
                f"  {label}: … {len(lines) - fitting} more lines of it not shown, the prompt is full"
            )
            budget = 0
    if not arguments:
        shown.append("  (no arguments)")
    if left_out:
        room = MAX_PROMPT_CHARS - len("\n".join([head, *shown, "Allow this call?"])) - 1
        shown.append(_left_out_line(left_out, room))
    return "\n".join([head, *shown, "Allow this call?"])


def _left_out_line(names: list[str], room: int) -> str:
    """`not shown, the prompt is full: a, b, and 3 more`, within `room` characters."""
    head = "  not shown, the prompt is full: "
    for count in range(len(names), 0, -1):
        rest = len(names) - count
        line = head + ", ".join(names[:count]) + (f", and {rest} more" if rest else "")
        if len(line) <= room:
            return line
    return f"{head}{len(names)} arguments"
