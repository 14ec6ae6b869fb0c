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

__all__ = ["format_row", "format_table", "printable"]

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
