"""The catalog: Python names for child tools, lookup in either spelling, statuses and suggestions."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations
from pydantic import ValidationError

from gateway.catalog import Catalog, CatalogServer, _catalog
from gateway.children import ChildState, ChildStatus
from tests.real_servers import snapshot_catalog


def _real_catalog() -> Catalog:
    """The `tools/list` of the five real child servers, as captured in tests/data/tools."""
    return snapshot_catalog()


def _tool(name: str, description: str = "", **properties: dict[str, Any]) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object", "properties": properties})


@pytest.fixture(scope="module")
def real() -> Catalog:
    return _real_catalog()


def test_the_real_fixtures_hold_fifty_tools_from_five_servers(real: Catalog) -> None:
    assert [s.identifier for s in real.servers] == ["everything", "filesystem", "git", "memory", "time"]
    assert len(real) == 50
    assert all(s.state == "ready" for s in real.servers)


def test_tools_are_addressed_as_server_dot_python_name(real: Catalog) -> None:
    entry = real.get("everything.get_sum")
    assert entry is not None
    assert (entry.server_id, entry.server_name, entry.tool_name) == ("everything", "everything", "get-sum")
    assert (entry.python_name, entry.qualified) == ("get_sum", "everything.get_sum")


@pytest.mark.parametrize("name", ["everything.get-sum", "tools.everything.get_sum", " everything.get_sum "])
def test_original_and_prefixed_spellings_resolve_to_the_same_tool(real: Catalog, name: str) -> None:
    entry = real.get(name)
    assert entry is not None
    assert entry.qualified == "everything.get_sum"
    assert name in real


def test_unknown_names_are_not_found(real: Catalog) -> None:
    assert real.get("everything.get_summ") is None
    assert real.get("get_sum") is None
    assert "nope.nope" not in real


def test_server_names_become_identifiers_and_keep_their_original_name() -> None:
    catalog = Catalog({"github-mcp": [_tool("list-issues")]})
    entry = catalog.get("github_mcp.list_issues")
    assert entry is not None
    assert (entry.server_name, entry.tool_name) == ("github-mcp", "list-issues")
    assert catalog.get("github-mcp.list-issues") is entry
    status = catalog.server("github-mcp")
    assert status is not None
    assert status.identifier == "github_mcp"
    assert catalog.tools_of("github-mcp") == catalog.tools_of("github_mcp") == (entry,)


def test_servers_whose_names_collide_get_distinct_identifiers() -> None:
    catalog = Catalog({"my.server": [_tool("a")], "my-server": [_tool("b")]})
    assert [(s.name, s.identifier) for s in catalog.servers] == [
        ("my-server", "my_server"),
        ("my.server", "my_server_2"),
    ]
    assert catalog.get("my_server.b") is not None
    assert catalog.get("my_server_2.a") is not None


def test_an_original_spelling_never_shadows_another_tools_python_name() -> None:
    catalog = Catalog({"srv": [_tool("get-sum", "kebab"), _tool("get_sum", "snake")]})
    snake, kebab = catalog.get("srv.get_sum"), catalog.get("srv.get_sum_2")
    assert snake is not None
    assert kebab is not None
    assert (snake.tool_name, kebab.tool_name) == ("get_sum", "get-sum")
    assert catalog.get("srv.get-sum") is kebab


def test_a_tool_listed_twice_keeps_its_first_definition() -> None:
    catalog = Catalog({"srv": [_tool("echo", "first"), _tool("echo", "second")]})
    assert len(catalog) == 1
    entry = catalog.get("srv.echo")
    assert entry is not None
    assert entry.description == "first"


def test_each_server_keeps_the_order_it_listed_its_tools_in(real: Catalog) -> None:
    assert [e.python_name for e in real.tools_of("time")] == ["get_current_time", "convert_time"]


def test_annotations_become_read_only_and_destructive_hints(real: Catalog) -> None:
    log, reset = real.get("git.git_log"), real.get("git.git_reset")
    assert log is not None
    assert reset is not None
    assert (log.read_only, log.destructive) == (True, False)
    assert (reset.read_only, reset.destructive) == (False, True)


def test_the_title_falls_back_to_the_annotations_title() -> None:
    tool = Tool(name="t", input_schema={"type": "object"}, annotations=ToolAnnotations(title="Nice T"))
    entry = Catalog({"s": [tool]}).get("s.t")
    assert entry is not None
    assert entry.title == "Nice T"


def test_parameter_names_that_are_not_identifiers_map_back_to_the_schema() -> None:
    tool = _tool("move", **{"from": {"type": "string"}, "dry-run": {"type": "boolean"}, "to": {}})
    entry = Catalog({"s": [tool]}).get("s.move")
    assert entry is not None
    assert entry.argument_names == {"from_": "from", "dry_run": "dry-run", "to": "to"}
    assert entry.wire_arguments({"from_": "a", "dry_run": True, "to": "b", "extra": 1}) == {
        "from": "a",
        "dry-run": True,
        "to": "b",
        "extra": 1,
    }


def test_servers_get_their_identifier_and_tool_count_from_the_catalog() -> None:
    status = ChildStatus("time-srv", "stdio", ChildState.READY, startup_ms=12.5)
    catalog = Catalog({"time-srv": [_tool("now")]}, [status])
    assert catalog.server("time_srv") == CatalogServer("time_srv", status, tool_count=1)
    assert catalog.server("time-srv") == catalog.server("time_srv")


def test_servers_without_tools_are_listed_with_their_state() -> None:
    catalog = Catalog(
        {"git": [_tool("git_log")]},
        [
            ChildStatus("slack", "stdio", ChildState.FAILED, error="exit 127"),
            ChildStatus("jira", "http", ChildState.CONNECTING),
        ],
    )
    assert [(s.identifier, s.state, s.tool_count) for s in catalog.servers] == [
        ("git", "ready", 1),
        ("jira", "connecting", 0),
        ("slack", "failed", 0),
    ]
    assert catalog.tools_of("slack") == ()
    assert catalog.tools_of("unknown") == ()


def test_a_catalog_cannot_be_changed_in_place(real: Catalog) -> None:
    entry = real.entries[0]
    with pytest.raises(ValidationError):
        entry.python_name = "other"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError):
        real.extra = 1  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(real.entries, tuple)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("everything.get_summ", "everything.get_sum"),
        ("everything.get-sun", "everything.get_sum"),
        ("git.gitlog", "git.git_log"),
        ("tools.time.current_time", "time.get_current_time"),
        ("get_current_time", "time.get_current_time"),
        ("create_entity", "memory.create_entities"),
    ],
)
def test_suggest_offers_the_closest_qualified_names_first(real: Catalog, name: str, expected: str) -> None:
    suggestions = real.suggest(name)
    assert suggestions[0] == expected
    assert len(suggestions) <= 3


def test_suggest_prefers_the_named_servers_tools() -> None:
    catalog = Catalog({"a": [_tool("read")], "b": [_tool("read")]})
    assert catalog.suggest("b.raed")[0] == "b.read"


def test_suggest_returns_nothing_for_unrelated_names(real: Catalog) -> None:
    assert real.suggest("zzzz.qqqq") == []


def test_suggest_servers_matches_identifiers_and_original_names() -> None:
    catalog = Catalog({"github-mcp": [], "gitlab": [], "time": []})
    assert catalog.suggest_servers("githb-mcp") == ["github_mcp"]
    assert catalog.suggest_servers("gitlb") == ["gitlab"]
    assert catalog.suggest_servers("zzzz") == []


def test_a_name_far_longer_than_any_tool_gets_no_suggestion_and_no_comparison(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = Catalog({"git": [Tool(name="git_log", input_schema={"type": "object"})]})
    compared: list[str] = []
    matcher = _catalog.difflib.SequenceMatcher
    monkeypatch.setattr(
        _catalog.difflib, "SequenceMatcher", lambda junk, a, b: compared.append(a) or matcher(junk, a, b)
    )
    assert catalog.suggest("git." + "q" * 200) == []
    assert catalog.suggest("x" * 30_000) == []
    assert catalog.suggest_servers("g" * 30_000) == []
    assert compared == []
    assert catalog.suggest("git.git_lgo") == ["git.git_log"]
