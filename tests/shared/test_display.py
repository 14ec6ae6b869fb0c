"""Text a person reads: argument text cannot start a line of its own or reorder what is around it."""

from __future__ import annotations

import json

import pytest

from gateway.shared._display import format_row, format_table, printable, terminal_text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("line\nforged", "line\\u000aforged"),
        ("bell\x07", "bell\\u0007"),
        ("caf\u00e9 \u202eevil", "caf\u00e9 \\u202eevil"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("para\u2029graph", "para\\u2029graph"),
        ("tag\U000e0041", "tag\\U000e0041"),
    ],
)
def test_characters_that_reshape_a_display_are_shown_as_escapes(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_plain_text_and_visible_unicode_are_left_as_they_are() -> None:
    assert printable("search_docs(query='héllo 日本')") == "search_docs(query='héllo 日本')"


def test_newlines_are_kept_only_when_asked_for() -> None:
    assert printable("a\nb\rc", newlines=True) == "a\nb\\u000dc"


def test_a_row_pads_every_cell_but_the_last_to_its_column() -> None:
    assert format_row(["a", "bb", "tail"], [3, 4]) == "a    bb    tail"


def test_a_table_aligns_columns_to_the_widest_shown_cell() -> None:
    table = format_table(["name", "state"], [["github", "ready"], ["x\ny", "failed"]])

    assert table.splitlines() == [
        "name      state",
        "github    ready",
        "x\\u000ay  failed",
    ]


def test_terminal_text_escapes_what_a_terminal_acts_on_and_keeps_newlines_and_tabs() -> None:
    text = "a\tb\nc\x1b[31m\r\x9b2K\x7f\u202e\u2028\u00ad\U000e0041 日本"
    assert terminal_text(text) == (
        "a\tb\nc\\u001b[31m\\u000d\\u009b2K\\u007f\\u202e\\u2028\\u00ad\\udb40\\udc41 日本"
    )


def test_terminal_text_keeps_json_text_json_with_the_same_value() -> None:
    value = {"line": "\x9b2K\r\u202e\u2028\U000e0041\ud800", "n": [1, "x"]}
    shown = terminal_text(json.dumps(value, ensure_ascii=False, indent=2))
    assert not {"\x9b", "\r", "\u202e", "\u2028", "\U000e0041"} & set(shown)
    assert json.loads(shown) == value
