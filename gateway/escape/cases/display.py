"""What people read: approval prompts, the audit table and check, which argument text must not reshape."""

from __future__ import annotations

from gateway.escape.cases._model import EscapeCase

__all__ = ["CASES"]

CASES: tuple[EscapeCase, ...] = ()
