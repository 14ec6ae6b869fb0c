"""The sandbox escape suite: hostile snippets run through the real execution path (`sandbox-test`)."""

from gateway.escape._report import sandbox_test
from gateway.escape._runner import run_suite
from gateway.escape.cases import CASES, CATEGORIES

__all__ = (
    "CASES",
    "CATEGORIES",
    "run_suite",
    "sandbox_test",
)
