"""Discovery from a snippet: the answers behind search(), help() and dir() on tools."""

from __future__ import annotations

import pytest

from gateway.catalog import Catalog, ObservedShapes
from gateway.catalog.docs import read_docs
from gateway.children import ChildState, ChildStatus
from tests.real_servers import snapshot_catalog, snapshot_tools


@pytest.fixture(scope="module")
def real() -> Catalog:
    return snapshot_catalog()


def test_search_answers_ranked_tools_as_data(real: Catalog) -> None:
    found = read_docs(real, "@search", {"query": "commit history", "limit": 2})
    assert found[0]["name"] == "git.git_log"
    assert len(found) == 2
    assert found[0]["signature"].startswith("git.git_log(*, repo_path: str")
    assert found[0]["description"] == "Shows the commit logs"


def test_an_empty_query_on_a_server_lists_its_tools_in_order(real: Catalog) -> None:
    found = read_docs(real, "@search", {"query": "", "server": "time", "limit": 50})
    assert [tool["name"] for tool in found] == ["time.get_current_time", "time.convert_time"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"query": 3}, "query must be a string, got int"),
        ({"query": "x", "limit": True}, "limit must be a whole number from 1 to 50"),
        ({"query": "x", "limit": 0}, "limit must be a whole number from 1 to 50"),
        ({"query": "x", "limit": 51}, "limit must be a whole number from 1 to 50"),
        ({"query": "x", "limit": "5"}, "limit must be a whole number from 1 to 50"),
        ({"query": "x", "server": "gti"}, 'Unknown server "gti". Did you mean git?'),
    ],
)
def test_a_malformed_search_says_what_to_pass(
    real: Catalog, payload: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        read_docs(real, "@search", payload)


def test_dir_of_tools_lists_the_servers_and_of_a_server_its_tools(real: Catalog) -> None:
    assert read_docs(real, "@docs", {})["names"] == ["everything", "filesystem", "git", "memory", "time"]
    assert read_docs(real, "@docs", {"server": "time"})["names"] == ["get_current_time", "convert_time"]


def test_help_on_a_tool_is_its_full_doc_and_on_a_server_its_signatures(real: Catalog) -> None:
    doc = read_docs(real, "@docs", {"server": "time", "tool": "convert_time"})["doc"]
    assert doc.startswith("time.convert_time(*, source_timezone: str, time: str, target_timezone: str)")
    assert '"required":["source_timezone","time","target_timezone"]' in doc
    listing = read_docs(real, "@docs", {"server": "time"})["doc"]
    assert listing.splitlines()[0] == "time (ready, 2 tools)"
    assert "time.get_current_time(*, timezone: str) -> {'timezone': str, 'datetime': str," in listing


def test_help_on_an_unknown_tool_suggests_the_close_one(real: Catalog) -> None:
    with pytest.raises(ValueError, match=r"time has no tool 'convert'\. Did you mean time\.convert_time\?"):
        read_docs(real, "@docs", {"server": "time", "tool": "convert"})


def test_a_tool_the_policy_hides_cannot_be_discovered(real: Catalog) -> None:
    visible = real.filtered(lambda entry: entry.qualified != "time.convert_time")
    assert "time.convert_time" not in [
        t["name"] for t in read_docs(visible, "@search", {"query": "convert time"})
    ]
    assert read_docs(visible, "@docs", {"server": "time"})["names"] == ["get_current_time"]
    with pytest.raises(ValueError, match="time has no tool 'convert_time'") as refused:
        read_docs(visible, "@docs", {"server": "time", "tool": "convert_time"})
    assert "time.convert_time" not in str(refused.value)  # suggestions name visible tools only


def test_help_on_a_tool_carries_the_policys_note(real: Catalog) -> None:
    noted = real.filtered(
        lambda _: True, access=lambda e: "denied by policy" if e.tool_name == "git_reset" else None
    )
    doc = read_docs(noted, "@docs", {"server": "git", "tool": "git_reset"})["doc"]
    assert doc.splitlines()[0].endswith("  [denied by policy]")


def test_help_on_a_server_shows_its_instructions_and_no_search_docs_hint() -> None:
    statuses = [ChildStatus("time", "stdio", ChildState.READY, instructions="Prefer IANA zone names.")]
    catalog = Catalog(snapshot_tools(), statuses, instructions_chars=2000)
    listing = read_docs(catalog, "@docs", {"server": "time"})["doc"]
    assert listing.splitlines()[-2:] == ["Instructions from the time server:", "  Prefer IANA zone names."]
    assert "search_docs" not in listing


def test_search_and_help_show_the_observed_return_type_of_a_tool_called_before() -> None:
    catalog = Catalog(snapshot_tools(), shapes=ObservedShapes())
    entry = catalog.get("git.git_log")
    assert entry is not None
    assert catalog.shapes is not None
    catalog.shapes.observe(entry, "Commit history:\nCommit: a8dd92\n")
    found = read_docs(catalog, "@search", {"query": "commit history", "limit": 1})
    assert found[0]["signature"].endswith("-> str  # (observed) Shows the commit logs")
    doc = read_docs(catalog, "@docs", {"server": "git", "tool": "git_log"})["doc"]
    assert "observed return type (not declared)" in doc
    assert "a8dd92" not in doc
