"""The blind set loads whole and its labels name real tools; its quality is reported, never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.catalog import Catalog
from tests.search_eval.blind.blind_set import (
    BLIND_QUERIES,
    blind_catalog,
    blind_servers,
    load_blind_queries,
)
from tests.search_eval.blind.worksheet import read_writer_file, unknown_names, write_worksheet
from tests.search_eval.eval_set import eval_catalog


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return blind_catalog()


def test_the_blind_catalog_has_every_server_of_both_manifests_and_300_tools(catalog: Catalog) -> None:
    names = {server.name for server in catalog.servers}
    assert blind_servers() <= names
    assert len(names) >= 22 + len(blind_servers())
    assert len(catalog) >= 300


def test_the_tuning_catalog_reads_none_of_the_blind_servers() -> None:
    assert not {server.name for server in eval_catalog().servers} & blind_servers()


def test_every_accepted_tool_of_the_blind_queries_exists_and_none_is_asked_twice(catalog: Catalog) -> None:
    queries = load_blind_queries(BLIND_QUERIES)
    assert unknown_names(queries, catalog) == {}
    assert len({query.query.lower() for query in queries}) == len(queries)


def test_a_malformed_query_line_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text('{"query": "q", "kind": "task", "writer": "a", "accept": []}\n\n{"query": "q2"}\n')
    with pytest.raises(ValueError, match=r"queries\.jsonl:3"):
        load_blind_queries(path)


def test_the_worksheet_lists_every_tool_and_every_writers_query_unlabelled(
    tmp_path: Path, catalog: Catalog
) -> None:
    writer = tmp_path / "writer-z.jsonl"
    lines = ['{"query": "book a meeting room", "kind": "task"}', '{"query": "hello", "kind": "none"}']
    writer.write_text("\n".join(lines) + "\n")
    write_worksheet(read_writer_file(writer), catalog, tmp_path / "out")
    sheet = (tmp_path / "out" / "worksheet.md").read_text(encoding="utf-8")
    todo = [json.loads(line) for line in (tmp_path / "out" / "queries.todo.jsonl").read_text().splitlines()]
    assert all(f"`{entry.qualified}`" in sheet for entry in catalog)
    assert "001. [writer z, task] book a meeting room" in sheet
    assert todo == [
        {"query": "book a meeting room", "kind": "task", "writer": "z", "accept": []},
        {"query": "hello", "kind": "none", "writer": "z", "accept": []},
    ]
