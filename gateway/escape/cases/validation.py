"""Argument validation at scale: linear-cost checks, ECMA-262 patterns, normalised paths (via a Gateway)."""

from __future__ import annotations

from gateway.escape.cases._model import EscapeCase

__all__ = ["CASES"]

CASES: tuple[EscapeCase, ...] = ()
