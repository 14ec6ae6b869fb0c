"""The command line's exit codes."""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_FAILED = 1  # a snippet failed, a child did not connect, a case escaped, a log is missing
EXIT_USAGE = 2  # a usage or config error
