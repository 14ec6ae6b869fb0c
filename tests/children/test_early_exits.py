"""Counting a child's exits before it ever connected: only a run of alike ones fails it for good."""

from __future__ import annotations

from gateway.children._early_exits import EARLY_EXITS_TO_FAIL, EarlyExits, early_exit_reason

NOT_FOUND = "stderr: error: mcp-server-tiem was not found in the package registry"


def test_exits_that_say_the_same_thing_are_counted_in_a_row() -> None:
    exits = EarlyExits()
    assert [exits.exited(NOT_FOUND) for _ in range(EARLY_EXITS_TO_FAIL)] == [1, 2, 3]


def test_an_exit_that_says_something_else_starts_the_count_again() -> None:
    exits = EarlyExits()
    assert [exits.exited(output) for output in (NOT_FOUND, NOT_FOUND, "stderr: port 8080 in use")] == [
        1,
        2,
        1,
    ]
    assert exits.exited("stderr: port 8080 in use") == 2


def test_a_failure_that_is_no_exit_starts_the_count_again() -> None:
    exits = EarlyExits()
    exits.exited(NOT_FOUND)
    exits.exited(NOT_FOUND)
    exits.other_failure()  # a startup timeout, say
    assert exits.exited(NOT_FOUND) == 1


def test_a_child_that_connected_once_is_never_counted_again() -> None:
    exits = EarlyExits()
    exits.exited(NOT_FOUND)
    exits.connected()
    assert [exits.exited(NOT_FOUND) for _ in range(EARLY_EXITS_TO_FAIL + 1)] == [0, 0, 0, 0]


def test_the_reason_says_what_happened_and_what_to_do_before_what_the_child_printed() -> None:
    assert early_exit_reason(3, NOT_FOUND) == (
        "exited before it connected, 3 times in a row the same way; fix its command, then reload the config "
        "(or restart the gateway); stderr: error: mcp-server-tiem was not found in the package registry"
    )
    assert early_exit_reason(3, "").endswith("(or restart the gateway); it printed nothing on stderr")
