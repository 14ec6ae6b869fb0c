"""The command line's own output, as a terminal shows it: text a snippet, a child or a config chose
cannot send the terminal a control sequence or reorder a line."""

from __future__ import annotations

import sys
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, TextIO

from gateway.shared import terminal_text

__all__ = ["TerminalStream", "terminal_output"]


class TerminalStream:
    """A text stream that writes through `terminal_text`: what a command prints, from a config's names
    to a snippet's output, reaches the terminal with its control and invisible characters escaped."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...
        return getattr(self.stream, name)


@contextmanager
def terminal_output(*, stdout: bool) -> Generator[None]:
    """Send stderr (and stdout, unless it carries a protocol) through `TerminalStream` meanwhile."""
    saved = sys.stdout, sys.stderr
    if stdout and not isinstance(sys.stdout, TerminalStream):
        sys.stdout = TerminalStream(sys.stdout)  # pyright: ignore[reportAttributeAccessIssue]
    if not isinstance(sys.stderr, TerminalStream):
        sys.stderr = TerminalStream(sys.stderr)  # pyright: ignore[reportAttributeAccessIssue]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
