"""Python identifiers for child server, tool and parameter names."""

from __future__ import annotations

import keyword

import pytest

from gateway.catalog._naming import assign_identifiers, split_words, to_identifier


@pytest.mark.parametrize(
    ("name", "expected"),
    [("get-sum", "get_sum"), ("github-mcp", "github_mcp"), ("read.file v2", "read_file_v2"), ("a--b", "a_b")],
)
def test_kebab_case_tool_names_become_python_identifiers(name: str, expected: str) -> None:
    assert to_identifier(name) == expected


def test_camel_case_and_snake_case_names_are_kept_as_they_are() -> None:
    assert to_identifier("getCurrentTime") == "getCurrentTime"
    assert to_identifier("git_diff_staged") == "git_diff_staged"


@pytest.mark.parametrize(("name", "expected"), [("class", "class_"), ("from", "from_"), ("None", "None_")])
def test_python_keywords_get_a_trailing_underscore(name: str, expected: str) -> None:
    assert to_identifier(name) == expected


def test_leading_digits_get_an_underscore_prefix() -> None:
    assert to_identifier("3d-render") == "_3d_render"


def test_empty_or_symbol_only_names_fall_back_to_a_default() -> None:
    assert to_identifier("") == "tool"
    assert to_identifier("---") == "tool"
    assert to_identifier("", fallback="server") == "server"


def test_accented_letters_lose_their_accents_rather_than_the_letter() -> None:
    assert to_identifier("café-menu") == "cafe_menu"


def test_leading_underscores_are_dropped_so_no_name_is_a_dunder() -> None:
    # The guest's proxies refuse attribute names starting with "__".
    assert to_identifier("__init__") == "init"


def test_colliding_names_get_numbered_suffixes_in_sorted_order() -> None:
    assert assign_identifiers(["get.sum", "get-sum", "get sum"]) == {
        "get sum": "get_sum",
        "get-sum": "get_sum_2",
        "get.sum": "get_sum_3",
    }


def test_a_name_that_already_is_an_identifier_keeps_it() -> None:
    assert assign_identifiers(["get-sum", "get_sum"]) == {"get_sum": "get_sum", "get-sum": "get_sum_2"}


def test_a_suffix_never_takes_a_name_another_tool_already_has() -> None:
    assert assign_identifiers(["a-b", "a.b", "a_b_2"]) == {"a_b_2": "a_b_2", "a-b": "a_b", "a.b": "a_b_3"}


def test_claimed_names_keep_their_identifiers_and_the_others_go_around_them() -> None:
    claimed = {"get-sum": "get_sum"}
    assert assign_identifiers(["get-sum", "get_sum", "get.sum"], claimed=claimed) == {
        "get-sum": "get_sum",
        "get.sum": "get_sum_2",
        "get_sum": "get_sum_3",
    }


def test_identifiers_do_not_depend_on_the_order_names_arrive_in() -> None:
    names = ["x-y", "x_y", "x.y", "class", "class_", "", "9"]
    assert assign_identifiers(names) == assign_identifiers(reversed(names))


def test_every_assigned_identifier_is_a_unique_valid_non_keyword_name() -> None:
    names = ["", "-", "if", "if_", "1", "_1", "a b", "a-b", "a_b", "Ünïcode", "日本", "x" * 3, "__x__"]
    assigned = assign_identifiers(names)
    assert set(assigned) == set(names)
    assert len(set(assigned.values())) == len(names)
    for ident in assigned.values():
        assert ident.isidentifier()
        assert ident.isascii()
        assert not keyword.iskeyword(ident)
        assert not ident.startswith("__")


def test_words_are_split_at_snake_kebab_camel_case_and_digit_boundaries() -> None:
    assert split_words("get_currentTime-v2") == ["get", "current", "Time", "v", "2"]
    assert split_words("parseHTTPResponse") == ["parse", "HTTP", "Response"]
