"""Why a tool name resolves to nothing: its server is blocked or down, or the name is a near miss."""

from __future__ import annotations

from mcp.types import Tool

from gateway.catalog import Catalog
from gateway.catalog._unknown import unknown_tool_message
from gateway.children import ChildState, ChildStatus


def _tool(name: str) -> Tool:
    return Tool(name=name, description=f"{name} things", input_schema={"type": "object", "properties": {}})


def _catalog() -> Catalog:
    return Catalog(
        {"git": [_tool("git_status"), _tool("git_log")]},
        [
            ChildStatus("git", "stdio", ChildState.READY),
            ChildStatus("slack", "stdio", ChildState.FAILED, error="exit 127"),
            ChildStatus("jira", "http", ChildState.CONNECTING),
        ],
    )


def test_a_near_miss_names_the_tool_it_resembles_and_points_to_search_docs() -> None:
    message = unknown_tool_message(_catalog(), "git.git_staus")

    assert message.startswith("unknown tool 'git.git_staus'; did you mean git.git_status")
    assert message.endswith("? Call search_docs to find tools.")


def test_a_tool_of_a_server_there_is_not_names_the_servers_there_are() -> None:
    message = unknown_tool_message(_catalog(), "weather.forecast")

    assert message == (
        "unknown tool 'weather.forecast': no server 'weather' (there are git, jira, slack). "
        "Call search_docs to find tools."
    )


def test_a_name_like_no_tool_of_a_known_server_points_to_search_docs_only() -> None:
    message = unknown_tool_message(_catalog(), "git.frobnicate")

    assert message == "unknown tool 'git.frobnicate'. Call search_docs to find tools."


def test_a_tool_of_a_failed_server_says_the_server_is_down_and_why() -> None:
    message = unknown_tool_message(_catalog(), "slack.post_message")

    assert message == "server 'slack' failed: exit 127; its tools cannot be called now"


def test_a_tool_of_a_connecting_server_says_so_without_a_reason() -> None:
    message = unknown_tool_message(_catalog(), "jira.search")

    assert message == "server 'jira' is connecting; its tools cannot be called now"


def test_a_tool_of_a_blocked_server_says_it_is_blocked_rather_than_suggesting_names() -> None:
    catalog = _catalog().filtered(lambda _: True, blocked={"git": "its config changed since review"})

    message = unknown_tool_message(catalog, "git.git_status")

    assert message == "server 'git' is blocked: its config changed since review"
