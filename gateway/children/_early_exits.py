"""A stdio child that exits before it ever connected, the same way several times in a row, fails for
good: a misspelled package (`uvx mcp-server-tiem`) or a missing argument will not fix itself, and
retrying it for ever only hides the reason among reconnect attempts.

A child that connected once keeps the restart policy (it may come back); so does one whose failure
changes from one attempt to the next (a download, a port still held: it may be transient).
"""

from __future__ import annotations

__all__ = ["EARLY_EXITS_TO_FAIL", "EarlyExits", "early_exit_reason"]

EARLY_EXITS_TO_FAIL = 3
"""Exits before connecting, in a row and alike, that fail a child for good."""


class EarlyExits:
    """One child's exits before its first connection that said the same thing (its stderr tail, a
    non-MCP line on stdout), counted since the child was (re)started."""

    def __init__(self) -> None:
        self._connected = False
        self._count = 0
        self._output: str | None = None

    def connected(self) -> None:
        """The child connected: from now on its exits are the restart policy's."""
        self._connected = True

    def other_failure(self) -> None:
        """A failure that is no early exit (a timeout, a protocol error) ends the run."""
        self._count, self._output = 0, None

    def exited(self, output: str) -> int:
        """Count an exit before the handshake whose output was `output`; the exits alike in a row so
        far (0 once the child has connected)."""
        if self._connected:
            return 0
        self._count = self._count + 1 if output == self._output else 1
        self._output = output
        return self._count


def early_exit_reason(count: int, output: str) -> str:
    """Why the child failed for good and what to do, then what it printed (`output`: "stderr: ...")."""
    return (
        f"exited before it connected, {count} times in a row the same way; fix its command, then reload "
        f"the config (or restart the gateway); {output or 'it printed nothing on stderr'}"
    )
