"""Every value the config's schema accepts for a sandbox limit runs: the bounds are what wasmtime takes."""

from __future__ import annotations

from typing import Any

import pytest
from annotated_types import Ge, Le

from gateway.sandbox import Sandbox
from gateway.sandbox.limits import SandboxLimits

# A slot or two and no prewarming keep each sandbox cheap; the fields under test override them.
_SMALL = {"max_concurrent_executions": 1, "prewarm_instances": 0}


def _bounds() -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for name, field in SandboxLimits.model_fields.items():
        for bound in field.metadata:
            if isinstance(bound, Le):
                cases.append((name, bound.le))
            elif isinstance(bound, Ge):
                cases.append((name, bound.ge))
    return cases


def test_every_numeric_limit_has_an_upper_bound_or_is_only_compared() -> None:
    compared_only = {"max_tool_calls", "max_tool_args_bytes", "max_tool_result_bytes"}
    for name, field in SandboxLimits.model_fields.items():
        if field.annotation is bool:  # a switch, not a limit
            continue
        has_upper = any(isinstance(bound, Le) for bound in field.metadata)
        assert has_upper or name in compared_only, f"sandbox.{name} needs an upper bound the engine takes"


@pytest.mark.parametrize(("name", "value"), _bounds(), ids=[f"{n}={v}" for n, v in _bounds()])
def test_a_sandbox_at_each_bound_of_the_schema_runs_a_snippet(name: str, value: Any) -> None:
    limits = SandboxLimits.model_validate(_SMALL | {name: value})
    with Sandbox(limits) as sandbox:
        result = sandbox.execute_sync("sum(range(10))")
    assert result.error is None, result.error
    assert result.value == 45


def test_the_deepest_stack_the_schema_allows_still_ends_runaway_recursion_cleanly() -> None:
    limits = SandboxLimits.model_validate(_SMALL | {"max_wasm_stack_bytes": 2 * 1024 * 1024})
    with Sandbox(limits) as sandbox:
        result = sandbox.execute_sync("import json\njson.loads('[' * 100_000)")
        after = sandbox.execute_sync("1 + 1")
    assert result.error is not None
    assert result.error.type == "StackExhausted"
    assert after.value == 2
