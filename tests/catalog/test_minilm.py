"""The real embedding model of the `semantic` extra, where it is installed (skipped elsewhere)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest

from gateway.catalog import Catalog, SemanticSearch, evaluate_search, load_tool_snapshots, semantic_installed
from gateway.catalog._search import search
from gateway.catalog._semantic import load_minilm
from tests.search_eval.eval_set import CATALOG_DIRS, HOLDOUT_QUERIES, eval_cases

pytestmark = pytest.mark.skipif(
    not semantic_installed(), reason="the semantic extra is not installed (pip install '.[semantic]')"
)


@pytest.fixture(scope="module")
def semantic() -> SemanticSearch:
    semantic = SemanticSearch()
    assert semantic.load(timeout=300) is not None, semantic.error
    return semantic


@pytest.fixture(scope="module")
def catalog(semantic: SemanticSearch) -> Catalog:
    return Catalog(load_tool_snapshots(list(CATALOG_DIRS)), semantic=semantic)


def test_the_model_loads_from_its_wheel_with_the_hub_switched_off(semantic: SemanticSearch) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
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


def test_a_missing_model_file_is_built_once_from_the_wheel_then_reused(
    tmp_path: Path, semantic: SemanticSearch
) -> None:
    first = load_minilm(tmp_path)
    [built] = (tmp_path / "search").glob("*.onnx")
    assert built.name.startswith("all-minilm-l6-v2-")
    stamp = built.stat().st_mtime_ns
    again = load_minilm(tmp_path)  # the same cache: loaded, not rebuilt
    assert built.stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "search").iterdir() if p != built]  # no scratch left behind
    text = ["list the open pull requests of a repository"]
    assert (first.encode(text) == again.encode(text)).all()
    assert semantic.embedder is not None
    assert first.encode(text) == pytest.approx(semantic.embedder.encode(text))  # the same export


def test_a_model_that_cannot_be_built_leaves_search_lexical_and_says_why(tmp_path: Path) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory should be")
    semantic = SemanticSearch(load=partial(load_minilm, blocked))
    assert semantic.load(timeout=300) is None
    assert "exporting the search model failed" in str(semantic.error)
    catalog = Catalog(load_tool_snapshots(list(CATALOG_DIRS)), semantic=semantic)
    hits = search(catalog, "read a file", limit=3)
    assert hits
    assert all(hit.similarity is None for hit in hits)
