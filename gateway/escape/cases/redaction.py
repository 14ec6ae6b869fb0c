"""Redaction without an oracle: secrets of every type and path, short ones included, through a Gateway."""

from __future__ import annotations

from gateway.escape.cases._model import EscapeCase

__all__ = ["CASES"]

CASES: tuple[EscapeCase, ...] = ()
