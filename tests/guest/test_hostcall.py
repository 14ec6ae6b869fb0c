"""The guest's side of the host import: a tool's arguments leave as JSON, its answer comes back as
values, and arguments that are not JSON are refused in the snippet, saying why (run in the sandbox)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from gateway import Sandbox
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio

WAIT = 60


async def run_echo(sandbox: Sandbox, code: str) -> tuple[Any, list[dict[str, Any]], str]:
    """Run `code` with a tool `m.echo` that answers its arguments; the run's value, what the tool got,
    and the error message (empty when it ran to the end)."""
    received: list[dict[str, Any]] = []

    def echo(**arguments: Any) -> dict[str, Any]:
        received.append(arguments)
        return arguments

    with anyio.fail_after(WAIT):
        result = await sandbox.execute(code, tool_caller=InProcessTools({"m.echo": echo}))
    return result.value, received, "" if result.error is None else result.error.message


async def test_arguments_reach_the_tool_and_its_answer_the_snippet_unchanged(sandbox: Sandbox) -> None:
    code = (
        "sent = dict(text='é☃ \"quoted\" \\\\', big=2**80, neg=-(2**70), real=1.5e300, none=None,\n"
        "            flag=True, nested=[{'k': [1, 2.5, 'x']}, []], empty={})\n"
        "got = tools.m.echo(**sent)\n"
        "[got == sent, list(got) == list(sent)]"
    )
    value, received, error = await run_echo(sandbox, code)
    assert error == ""
    assert value == [True, True]
    assert received == [
        {
            "text": 'é☃ "quoted" \\',
            "big": 2**80,
            "neg": -(2**70),
            "real": 1.5e300,
            "none": None,
            "flag": True,
            "nested": [{"k": [1, 2.5, "x"]}, []],
            "empty": {},
        }
    ]


async def test_a_lone_surrogate_in_the_arguments_crosses_escaped(sandbox: Sandbox) -> None:
    value, received, error = await run_echo(sandbox, "tools.m.echo(s='a\\ud800b')['s'] == 'a\\ud800b'")
    assert error == ""
    assert value is True
    assert received == [{"s": "a\ud800b"}]


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        ("{1, 2}", "Object of type set is not JSON serializable"),
        ("float('nan')", "Out of range float values are not JSON compliant"),
        ("cycle", "Circular reference detected"),
    ],
)
async def test_arguments_that_are_not_json_are_refused_before_the_call_saying_why(
    sandbox: Sandbox, argument: str, said: str
) -> None:
    # Each refusal is caught, and a call after it (its encoder left mid-value) still goes through.
    code = (
        "cycle = []\ncycle.append(cycle)\n"
        f"try:\n    tools.m.echo(x=[1, {argument}])\nexcept TypeError as exc:\n    refused = str(exc)\n"
        "[refused, tools.m.echo(x=[1, 2])]"
    )
    value, received, error = await run_echo(sandbox, code)
    assert error == ""
    refused, answered = value
    assert refused.startswith("arguments to m.echo must be JSON values: ")
    assert said in refused
    assert answered == {"x": [1, 2]}
    assert received == [{"x": [1, 2]}]  # the refused call never reached the tool
