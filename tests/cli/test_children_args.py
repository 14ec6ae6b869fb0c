"""Children given on the command line after `--`, as `serve`, `check` and `exec` take them."""

from __future__ import annotations

import pytest

from gateway.cli._children_args import parse_children, split_children
from gateway.errors import ConfigError


def test_the_words_after_the_first_separator_are_the_children() -> None:
    own, children = split_children(["serve", "--http", "8000", "--", "time", "uvx", "mcp-server-time"])
    assert own == ["serve", "--http", "8000"]
    assert children == ["time", "uvx", "mcp-server-time"]
    assert split_children(["serve"]) == (["serve"], None)


def test_each_part_is_a_name_then_its_command_passed_on_as_written() -> None:
    children = parse_children(
        ["time", "uvx", "mcp-server-time", "--local-timezone", "UTC", "--", "git", "git-mcp"]
    )
    assert children == {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
        "git": {"command": "git-mcp", "args": []},
    }


def test_a_name_alone_takes_the_next_part_as_its_command() -> None:
    words = ["time", "--", "uvx", "mcp-server-time", "--", "gh", "--transport", "http", "https://h/mcp"]
    children = parse_children(words)
    assert children["time"] == {"command": "uvx", "args": ["mcp-server-time"]}
    assert children["gh"] == {"type": "http", "url": "https://h/mcp"}


def test_an_http_child_takes_headers_with_variables_left_for_the_config_to_expand() -> None:
    words = [
        "gh",
        "--transport",
        "http",
        "https://h/mcp",
        "-H",
        "Authorization: Bearer ${GH_TOKEN}",
        "-H",
        "X-A:1",
    ]
    assert parse_children(words) == {
        "gh": {
            "type": "http",
            "url": "https://h/mcp",
            "headers": {"Authorization": "Bearer ${GH_TOKEN}", "X-A": "1"},
        }
    }


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["time"], "child 'time' has no command"),
        (["time", "uvx", "--", "time", "npx"], "child 'time' is given twice"),
        (["--transport", "http"], "a child's name comes first"),
        (["a", "b", "--", "--", "c", "d"], "an empty child"),
        (["gh", "--transport", "sse", "u"], "--transport takes stdio or http"),
        (["gh", "--transport", "http"], "needs a URL next"),
        (["gh", "--transport", "http", "https://h", "-H", "no-colon"], "is not 'Name: value'"),
        (["gh", "--transport", "http", "https://h", "extra"], "only -H 'Name: value' may follow"),
        ([], "nothing follows '--'"),
        (["gh", "https://h/mcp"], "'https://h/mcp' is a URL: write -- gh --transport http https://h/mcp"),
        (["uvx", "mcp-server-time"], "name comes first, then its command: -- time uvx mcp-server-time"),
        (["/usr/bin/srv", "--flag"], "name comes first, then its command: -- NAME /usr/bin/srv --flag"),
    ],
)
def test_a_malformed_child_is_refused_with_what_to_write(words: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_children(words)
