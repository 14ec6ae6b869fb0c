"""Text that a person reads (approval prompts, the command line's tables): argument text cannot reshape it.

Control characters, line and paragraph separators, lone surrogates and the invisible format
characters (bidirectional overrides, zero-width and tag characters) are shown as `\\uXXXX` escapes,
so a value can neither start a line that looks like the gateway's own nor reorder what is shown
around it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

__all__ = ["format_row", "format_table", "printable", "terminal_text"]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _shown(char: str, newlines: bool) -> str:
    if newlines and char == "\n":
        return char
    return _escape(char) if unicodedata.category(char) in _HIDDEN_CATEGORIES else char


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with every character that could reshape its display escaped; `newlines` keeps `\\n`."""
    if text.isascii():
        return _ASCII_CONTROL.sub(lambda match: _shown(match.group(), newlines), text)
    return "".join(_shown(char, newlines) for char in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character past the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _terminal_char(match: re.Match[str]) -> str:
    char = match.group()
    return _json_escape(char) if unicodedata.category(char) in _HIDDEN_CATEGORIES else char


# Every character `printable` escapes but a newline and a tab: those lay out the gateway's own output.
_TERMINAL_HIDDEN = re.compile("[^\t\n\x20-\x7e\xa0-\u00ac\u00ae-\u05ff]")


def terminal_text(text: str) -> str:
    """`text` as a terminal may show it: every character that could move the cursor, start a
    terminal sequence or reorder the line escaped, newlines and tabs kept. The escapes are JSON's,
    and those characters occur in JSON text only inside strings, so JSON stays JSON with the same
    value."""
    return _TERMINAL_HIDDEN.sub(_terminal_char, text)


def format_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line: each cell made printable and padded to its column's width (the last one not padded)."""
    shown = [printable(cell) for cell in cells]
    padded = [cell.ljust(width) for cell, width in zip(shown[:-1], widths, strict=False)]
    return "  ".join([*padded, *shown[-1:]]).rstrip()


def format_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The header and the rows, one line each, columns aligned."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(printable(line[i])) for line in lines) for i in range(len(header))]
    return "\n".join(format_row(line, widths) for line in lines)
