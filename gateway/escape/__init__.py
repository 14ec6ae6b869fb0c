"""The sandbox escape suite: hostile snippets run through the real execution path (`sandbox-test`)."""

from gateway.escape._report import add_sandbox_test_arguments, run_sandbox_test, sandbox_test
from gateway.escape._runner import run_suite
from gateway.escape.cases import CASES, CATEGORIES

__all__ = (
    "CASES",
    "CATEGORIES",
    "add_sandbox_test_arguments",
    "run_sandbox_test",
    "run_suite",
    "sandbox_test",
)
