"""The real embedding model of the `semantic` extra, as shipped (built by `make runtime` in a clone)."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from gateway.catalog import Catalog
from gateway.catalog._render import render_search
from gateway.catalog._search import search
from gateway.catalog._semantic import load_minilm, semantic_installed
from gateway.catalog.docs import SemanticSearch
from gateway.catalog.evaluation import evaluate_search, load_tool_snapshots
from tests.real_servers import REPO
from tests.search_eval.eval_set import CATALOG_DIRS, HOLDOUT_QUERIES, eval_cases

pytestmark = pytest.mark.skipif(
    not semantic_installed(), reason="the search model or its runtime is not installed (make runtime)"
)


@pytest.fixture(scope="module")
def semantic() -> SemanticSearch:
    semantic = SemanticSearch()
    assert semantic.load(timeout=300) is not None, semantic.error
    return semantic


@pytest.fixture(scope="module")
def catalog(semantic: SemanticSearch) -> Catalog:
    return Catalog(load_tool_snapshots(list(CATALOG_DIRS)), semantic=semantic)


def test_the_shipped_model_embeds_texts_as_unit_rows_each_text_once(semantic: SemanticSearch) -> None:
    embedder = semantic.embedder
    assert embedder is not None
    rows = embedder.encode(["post a message to a channel", "read a file from disk"])
    assert rows.shape == (2, 384)
    assert (embedder.encode(["read a file from disk"])[0] == rows[1]).all()  # the same text, the same row
    near, far = embedder.similarities("tell the team the deploy is done", rows)
    assert near > far
    assert float(rows[0] @ rows[0]) == pytest.approx(1.0)  # unit rows: a cosine is a dot product


def test_a_task_phrased_without_the_tools_words_is_found(catalog: Catalog) -> None:
    lexical = Catalog(load_tool_snapshots(list(CATALOG_DIRS)))
    query, wanted = (
        "fix the typo on line 12 of config.py",
        {"filesystem.edit_file", "desktop_commander.edit_block"},
    )
    assert not wanted & {hit.entry.qualified for hit in search(lexical, query, limit=3)}
    hits = search(catalog, query, limit=3)
    assert wanted & {hit.entry.qualified for hit in hits}
    assert all(hit.similarity is not None for hit in hits)


def test_the_held_out_queries_reach_the_targets(catalog: Catalog) -> None:
    # Measured 93.9% / 96.5% top-3 / top-5 with the int8 model (lexical alone: 87.7% / 91.2%).
    report = evaluate_search(catalog, eval_cases(HOLDOUT_QUERIES), repeats=1)
    assert report.top3 >= 0.92, report.misses
    assert report.top5 >= 0.95


@pytest.mark.parametrize(
    "query",
    ["send the release notes on Telegram", "open a ticket in Zendesk for the refund", "add a Trello card"],
)
def test_a_request_for_a_product_no_server_offers_says_no_tool_fits(catalog: Catalog, query: str) -> None:
    hits = search(catalog, query, limit=5)
    assert hits[0].weak
    assert all(hit.elsewhere is not None and hit.elsewhere in query for hit in hits)


def test_the_answer_names_the_product_no_server_knows(catalog: Catalog) -> None:
    first = render_search(catalog, "open a ticket in Zendesk for the refund").splitlines()[0]
    assert first == ('No tool clearly fits (no server here knows "Zendesk"); the nearest:')


@pytest.mark.parametrize(
    ("query", "server"),
    [
        ("what time is it in Lisbon", "time"),  # a place
        ("find the slack profile of Jordan", "slack"),  # a person
        ("list the jira issues due Friday", "atlassian"),  # a day
        ("post the release notes on slack", "slack"),  # a server the catalog has
    ],
)
def test_a_person_place_or_day_the_catalog_does_not_know_is_not_taken_for_a_missing_product(
    catalog: Catalog, query: str, server: str
) -> None:
    hits = search(catalog, query, limit=5)
    assert all(hit.elsewhere is None for hit in hits)
    assert hits[0].entry.server_name == server


def test_the_model_imports_neither_torch_nor_transformers(semantic: SemanticSearch) -> None:
    assert semantic.embedder is not None
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_AND_LIST_MODULES],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    modules = set(done.stdout.split())
    assert "onnxruntime" in modules
    assert not modules & {"torch", "transformers", "onnx", "sentence_transformers"}


_LOAD_AND_LIST_MODULES = """
import sys
from gateway.catalog._semantic import load_minilm
model = load_minilm()
model.similarities("read a file", model.encode(["open a file"]))
print(" ".join(name for name in sys.modules if "." not in name))
"""


def test_a_model_directory_without_the_model_leaves_search_lexical_and_says_why(tmp_path: Path) -> None:
    semantic = SemanticSearch(load=partial(load_minilm, tmp_path))
    assert semantic.load(timeout=300) is None
    assert "all-minilm-l6-v2-int8.onnx" in str(semantic.error)
    catalog = Catalog(load_tool_snapshots(list(CATALOG_DIRS)), semantic=semantic)
    hits = search(catalog, "read a file", limit=3)
    assert hits
    assert all(hit.similarity is None for hit in hits)
