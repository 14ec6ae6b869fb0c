"""Ranked tool search (BM25) over the real child servers' tools and small made-up catalogs."""

from __future__ import annotations

import random
import string

import pytest
from mcp.types import Tool

from gateway.catalog import _spelling
from gateway.catalog._catalog import Catalog
from gateway.catalog._render import render_search
from gateway.catalog._search import _JOINED, MAX_CORRECTED_WORDS, TUNED, Hit, SearchRefused, _index, search
from gateway.catalog._spelling import Speller
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from tests.real_servers import snapshot_catalog


@pytest.fixture(scope="module")
def real() -> Catalog:
    return snapshot_catalog()


def _tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"})


def _names(hits: list[Hit]) -> list[str]:
    return [hit.entry.qualified for hit in hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("current time in a timezone", "time.get_current_time"),
        ("what time is it in Tokyo", "time.get_current_time"),
        ("convert time between time zones", "time.convert_time"),
        ("commit history", "git.git_log"),
        ("git diff of staged changes", "git.git_diff_staged"),
        ("unstaged changes", "git.git_diff_unstaged"),
        ("create a branch", "git.git_create_branch"),
        ("switch branch", "git.git_checkout"),
        ("commit changes", "git.git_commit"),
        ("working tree status", "git.git_status"),
        ("add numbers", "everything.get_sum"),
        ("sum of two numbers", "everything.get_sum"),
        ("echo a message", "everything.echo"),
        ("environment variables", "everything.get_env"),
        ("compress a file with gzip", "everything.gzip_file_as_resource"),
        ("create entities knowledge graph", "memory.create_entities"),
        ("relations between entities", "memory.create_relations"),
        ("search the knowledge graph", "memory.search_nodes"),
        ("delete observations", "memory.delete_observations"),
        ("read a file", "filesystem.read_text_file"),
        ("write a file", "filesystem.write_file"),
        ("list files in a directory", "filesystem.list_directory"),
        ("find files matching a pattern", "filesystem.search_files"),
        ("rename a file", "filesystem.move_file"),
        ("file size and modification time", "filesystem.get_file_info"),
        ("edit a file", "filesystem.edit_file"),
        ("make a new folder", "filesystem.create_directory"),
        ("read an image", "filesystem.read_media_file"),
    ],
)
def test_realistic_queries_find_the_expected_tool_in_the_top_three(
    real: Catalog, query: str, expected: str
) -> None:
    assert expected in _names(search(real, query, limit=3))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("git_diff", "git.git_diff"),
        ("everything.get-sum", "everything.get_sum"),
        ("tools.git.git_log", "git.git_log"),
    ],
)
def test_a_tool_named_exactly_by_the_query_comes_first(real: Catalog, query: str, expected: str) -> None:
    assert _names(search(real, query))[0] == expected


def test_results_are_sorted_best_first_and_capped_at_the_limit(real: Catalog) -> None:
    hits = search(real, "file", limit=4)
    assert len(hits) == 4
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)


def test_a_server_filter_keeps_only_that_servers_tools(real: Catalog) -> None:
    hits = search(real, "read", server="memory")
    assert hits
    assert {hit.entry.server_id for hit in hits} == {"memory"}


def test_an_unknown_server_filter_raises_key_error(real: Catalog) -> None:
    with pytest.raises(KeyError):
        search(real, "read", server="nope")


@pytest.mark.parametrize("query", ["", "   ", "zzzqqq", "the of and"])
def test_queries_without_known_words_find_nothing(real: Catalog, query: str) -> None:
    assert search(real, query) == []


def test_searching_an_empty_catalog_finds_nothing() -> None:
    assert search(Catalog(), "anything") == []


def test_name_words_outweigh_the_same_words_in_a_description() -> None:
    catalog = Catalog(
        {
            "mail": [
                _tool("store_note", "Stores a note; never used to send email to anyone"),
                _tool("send_email", "Delivers a message to a recipient"),
            ]
        }
    )
    assert _names(search(catalog, "send email"))[0] == "mail.send_email"


def test_rare_words_count_more_than_common_ones() -> None:
    catalog = Catalog(
        {"srv": [_tool("a", "list items"), _tool("b", "list things"), _tool("c", "list archived items")]}
    )
    assert _names(search(catalog, "list archived"))[0] == "srv.c"


def test_neighbouring_query_words_find_a_compound_word() -> None:
    catalog = Catalog({"srv": [_tool("a", "Checks the filesystem"), _tool("b", "Checks the network")]})
    assert _names(search(catalog, "file system")) == ["srv.a"]


def test_parameter_names_and_descriptions_are_searched() -> None:
    tool = Tool(
        name="fetch",
        input_schema={"type": "object", "properties": {"maxRetries": {"description": "backoff attempts"}}},
    )
    catalog = Catalog({"srv": [tool]})
    assert _names(search(catalog, "retries")) == ["srv.fetch"]
    assert _names(search(catalog, "backoff")) == ["srv.fetch"]


def _random_words(count: int, length: int) -> str:
    rng = random.Random(7)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(length)) for _ in range(count))


def test_a_query_past_the_cap_is_refused_naming_the_limit(real: Catalog) -> None:
    with pytest.raises(SearchRefused, match=r"1,001 characters, over search\.max_query_chars \(1,000\)"):
        render_search(real, "x" * (DEFAULT_MAX_QUERY_CHARS + 1), max_query_chars=DEFAULT_MAX_QUERY_CHARS)
    assert "git.git_log" in render_search(real, "commit history", max_query_chars=DEFAULT_MAX_QUERY_CHARS)


def test_a_server_name_past_the_name_cap_is_refused_before_it_is_looked_up(real: Catalog) -> None:
    with pytest.raises(SearchRefused, match="over the 256-character cap"):
        render_search(real, "log", "g" * 257)


def test_a_query_at_the_cap_of_long_random_words_asks_the_speller_only_bounded_work(
    real: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    expanded: list[str] = []
    corrections, deletions = Speller.corrections, _spelling._deletions

    def recording(self: Speller, word: str) -> list[str]:
        asked.append(word)
        return corrections(self, word)

    monkeypatch.setattr(Speller, "corrections", recording)
    monkeypatch.setattr(_spelling, "_deletions", lambda word: expanded.append(word) or deletions(word))
    query = _random_words(12, 82)  # 995 characters: within the cap, every word unknown and long
    assert len(query) <= DEFAULT_MAX_QUERY_CHARS
    text = render_search(real, query, max_query_chars=DEFAULT_MAX_QUERY_CHARS)
    assert text.startswith("No tool matches")
    # Each speller is asked about at most MAX_CORRECTED_WORDS words per pass (the query's typos
    # corrected for reading it, its terms' and words' variants, then the did-you-mean), and none
    # of a long word's deletions is ever made.
    assert 0 < len(asked) <= 4 * MAX_CORRECTED_WORDS
    assert expanded == []


def test_only_the_first_unknown_words_of_a_query_are_corrected(
    real: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    corrections = Speller.corrections
    monkeypatch.setattr(
        Speller, "corrections", lambda self, word: asked.append(word) or corrections(self, word)
    )
    query = " ".join(["brnach"] * 40)
    search(real, query)
    # Per word: the query's typos corrected for reading it, then the term and word spellers.
    assert len(asked) == 3 * MAX_CORRECTED_WORDS
    assert "git" in _names(search(real, "crate a brnach"))[0]


@pytest.mark.parametrize(
    ("query", "read_as"),
    [
        ("serach the web", "search the web"),  # two letters swapped
        ("lsit the pods", "list the pods"),
        ("remeber the fix", "remember the fix"),  # a letter dropped from a long word
        ("whats the tiem", "whats the time"),  # swapped either way, the first letter kept
        ("the stale pods in prod", "the stale pods in prod"),  # English words another letter from one
        ("Omar asked", "Omar asked"),  # a name
    ],
)
def test_a_slip_of_typing_is_read_as_the_word_the_catalog_knows(query: str, read_as: str) -> None:
    catalog = Catalog(
        {
            "work": [
                _tool("search_web", "Search the web for pages."),
                _tool("list_pods", "List the pods of a namespace, stale or scaled."),
                _tool("remember", "Remember a fact; get the current time or a data item."),
                _tool("scale", "Scale a deployment in production."),
            ]
        }
    )
    assert _index(catalog, TUNED).corrected(query) == read_as


def test_a_joined_name_is_read_only_from_the_start_of_its_word_so_a_long_word_is_scanned_once() -> None:
    # Started inside a run of letters, the pattern would rescan the rest of it from each letter:
    # a query of one 4,000-letter word took 1.5 s that way.
    assert _JOINED.search("abc-d", 1) is None
    assert _JOINED.findall("scale search-api, slo_daily and fix/otel-span-leak") == [
        "search-api",
        "slo_daily",
        "otel-span-leak",
    ]
    assert search(Catalog({"s": [_tool("get_thing", "Get a thing.")]}), "a" * 4_000 + "-b") == []
