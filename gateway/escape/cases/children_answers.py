"""What children send back: answers capped as they are read, timeouts blamed on the right party."""

from __future__ import annotations

from gateway.escape.cases._model import EscapeCase

__all__ = ["CASES"]

CASES: tuple[EscapeCase, ...] = ()
