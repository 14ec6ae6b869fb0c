"""The sandbox escape suite as data: hostile snippets by category, and what containing each looks like.

`gateway.escape._runner` runs them through a real `Sandbox`; `tests/escape` and
`codemode-gateway sandbox-test` use it.
"""

from __future__ import annotations

from gateway.escape.cases import (
    approvals,
    child_resources,
    children_answers,
    concurrency,
    discovery,
    display,
    environment,
    filesystem,
    host_calls,
    imports,
    introspection,
    middleware,
    names,
    network,
    output,
    persistence,
    policy,
    processes,
    redaction,
    resources,
    roles,
    snippet_input,
    tools,
    validation,
    wall_time,
)
from gateway.escape.cases._model import EscapeCase, Expect

__all__ = ["CASES", "CATEGORIES", "EscapeCase", "Expect"]

CASES: tuple[EscapeCase, ...] = (
    *filesystem.CASES,
    *network.CASES,
    *processes.CASES,
    *environment.CASES,
    *introspection.CASES,
    *imports.CASES,
    *persistence.CASES,
    *resources.CASES,
    *output.CASES,
    *tools.CASES,
    *host_calls.CASES,
    *wall_time.CASES,
    *snippet_input.CASES,
    *policy.CASES,
    *redaction.CASES,
    *validation.CASES,
    *children_answers.CASES,
    *display.CASES,
    *approvals.CASES,
    *discovery.CASES,
    *concurrency.CASES,
    *child_resources.CASES,
    *names.CASES,
    *roles.CASES,
    *middleware.CASES,
)

CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(case.category for case in CASES))
"""Every category, in suite order."""
