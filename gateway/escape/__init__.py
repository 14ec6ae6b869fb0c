"""The sandbox escape suite: hostile snippets run through the real execution path (`sandbox-test`)."""

from gateway.escape._report import sandbox_test
from gateway.escape.cases import CATEGORIES

__all__ = (
    "CATEGORIES",
    "sandbox_test",
)
