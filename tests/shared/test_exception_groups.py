"""The error inside the exception groups task groups raise: the first real one, however deep."""

from __future__ import annotations

from gateway.shared._exception_groups import leaf_error


def test_the_first_exception_inside_nested_groups_is_found() -> None:
    inner = ValueError("the child closed its pipe")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [inner, KeyError("later")])])

    assert leaf_error(group) is inner


def test_a_real_error_is_preferred_over_a_cancellation_listed_before_it() -> None:
    error = OSError("connection refused")
    group = BaseExceptionGroup("tasks", [KeyboardInterrupt(), error])

    assert leaf_error(group) is error


def test_a_group_of_base_exceptions_only_gives_the_first_of_them() -> None:
    first = KeyboardInterrupt()

    assert leaf_error(BaseExceptionGroup("tasks", [first, SystemExit(1)])) is first


def test_an_error_outside_any_group_is_itself() -> None:
    error = RuntimeError("plain")

    assert leaf_error(error) is error
