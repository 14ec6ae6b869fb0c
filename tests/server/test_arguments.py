"""execute_code's arguments: what each combination it refuses is told, naming the rule."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.server._arguments import BackgroundExecuteCodeArgs, ExecuteCodeArgs, execute_code_arguments


@pytest.mark.parametrize("arguments", [{}, {"code": ""}, {"timeout": 5}, {"details": True}])
def test_a_call_without_code_is_told_code_is_needed_unless_collect_or_cancel(
    arguments: dict[str, Any],
) -> None:
    refused = execute_code_arguments(arguments, background=True)
    assert refused == (
        "invalid arguments for execute_code: code is required unless collect or cancel names a background "
        "run (the Python source to run)"
    )


def test_without_background_runs_code_is_simply_required() -> None:
    refused = execute_code_arguments({}, background=False)
    assert refused == "invalid arguments for execute_code: code is required (the Python source to run)"


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"collect": "r1", "code": "1"}, "collect takes a background run's id alone, without code"),
        ({"collect": "r1", "cancel": "r1"}, "collect takes a background run's id alone, without cancel"),
        (
            {"cancel": "r1", "background": True},
            "cancel takes a background run's id alone, without background",
        ),
        ({"collect": "r1", "details": True}, "collect takes a background run's id alone, without details"),
        ({"cancel": "r1", "timeout": 3}, "cancel takes a background run's id alone, without timeout"),
    ],
)
def test_collect_and_cancel_refuse_any_other_argument_naming_it(
    arguments: dict[str, Any], named: str
) -> None:
    refused = execute_code_arguments(arguments, background=True)
    assert isinstance(refused, str)
    assert named in refused
    assert "go with the call that starts the run" in refused


@pytest.mark.parametrize("background", [False, True])
def test_an_unknown_argument_is_refused_naming_the_ones_execute_code_takes(background: bool) -> None:
    refused = execute_code_arguments({"code": "1", "source": "print(1)"}, background=background)
    model = BackgroundExecuteCodeArgs if background else ExecuteCodeArgs
    assert refused == (
        "invalid arguments for execute_code: source: not an argument of execute_code "
        f"(it takes {', '.join(model.model_fields)})"
    )


def test_background_arguments_are_unknown_where_background_runs_are_off() -> None:
    refused = execute_code_arguments({"code": "1", "background": True}, background=False)
    assert refused == (
        "invalid arguments for execute_code: background: not an argument of execute_code "
        "(it takes code, timeout, details)"
    )


def test_a_bad_value_names_its_argument_and_what_it_must_be() -> None:
    refused = execute_code_arguments({"code": "1", "timeout": -1}, background=True)
    assert refused == "invalid arguments for execute_code: timeout: Input should be greater than 0"


@pytest.mark.parametrize(
    "arguments",
    [
        {"code": "1"},
        {"code": "1", "details": True, "timeout": 2},
        {"code": "1", "background": True, "details": True},
        {"collect": "r1"},
        {"cancel": "r1"},
        {"collect": "r1", "background": False, "details": False},
    ],
)
def test_every_combination_the_schema_describes_is_accepted(arguments: dict[str, Any]) -> None:
    assert isinstance(execute_code_arguments(arguments, background=True), BackgroundExecuteCodeArgs)
