"""Plain-text tables for the command line: columns two spaces apart, each as wide as its widest cell."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["format_row", "format_table"]


def format_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line: each cell padded to its column's width (the last one not padded)."""
    padded = [cell.ljust(width) for cell, width in zip(cells[:-1], widths, strict=False)]
    return "  ".join([*padded, *cells[-1:]]).rstrip()


def format_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The header and the rows, one line each, columns aligned."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(format_row(line, widths) for line in lines)
