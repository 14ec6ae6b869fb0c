"""Scoring search against queries with known answers: hit rates, MRR, no-answer queries, misses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.types import Tool
from pydantic import ValidationError

from gateway.catalog import Catalog
from gateway.catalog.docs import SemanticSearch
from gateway.catalog.evaluation import SearchCase, compare_reports, evaluate_search, load_search_cases
from tests.catalog.fake_embedder import FakeEmbedder

CATALOG = Catalog(
    {
        "git": [
            Tool(name="git_log", description="Shows the commit logs", input_schema={"type": "object"}),
            Tool(
                name="git_status",
                description="Shows the working tree status",
                input_schema={"type": "object"},
            ),
        ],
        "time": [
            Tool(name="get_time", description="Current time in a timezone", input_schema={"type": "object"})
        ],
    }
)


def test_ranks_become_top_k_rates_and_mrr() -> None:
    cases = [
        SearchCase(query="commit logs", accept=["git.git_log"]),  # rank 1
        SearchCase(query="working tree status", accept=["git.git_status"]),  # rank 1
        SearchCase(query="timezone", accept=["git.git_log"]),  # wrong answer: never found
    ]
    report = evaluate_search(CATALOG, cases, repeats=1)
    assert (report.queries, report.answerable, report.tools) == (3, 3, 3)
    assert report.top1 == report.top3 == report.top5 == pytest.approx(2 / 3)
    assert report.mrr == pytest.approx(2 / 3)
    assert report.misses == [("timezone", ["git.git_log"], ["time.get_time"])]


def test_a_query_without_an_answer_passes_only_when_search_calls_its_results_weak() -> None:
    cases = [
        SearchCase(query="book a flight", kind="none"),  # nothing matches: rejected
        SearchCase(query="commit logs", kind="none"),  # a strong match for a query said to have none
    ]
    report = evaluate_search(CATALOG, cases, repeats=1)
    assert report.answerable == 0
    assert report.rejected == pytest.approx(0.5)
    assert report.by_kind == {"none": 0.5}


def test_the_report_table_shows_every_figure() -> None:
    table = evaluate_search(
        CATALOG, [SearchCase(query="commit logs", accept=["git.git_log"])], repeats=1
    ).table()
    for label in ("tools", "top-1", "top-3", "top-5", "MRR@5", "search p50 / p95", "top-3, general"):
        assert label in table


def test_a_semantic_catalog_is_measured_with_its_model_loaded_beside_the_lexical_one() -> None:
    tools = {
        "meteo": [
            Tool(name="get_forecast", description="The forecast for a city.", input_schema={"type": "object"})
        ],
        "shop": [
            Tool(name="create_invoice", description="Bill a customer.", input_schema={"type": "object"})
        ],
    }
    semantic = SemanticSearch(FakeEmbedder)  # not loaded yet: the evaluation loads it first
    cases = [SearchCase(query="do I need an umbrella", accept=["meteo.get_forecast"])]
    reports = {
        "lexical": evaluate_search(Catalog(tools), cases, repeats=1),
        "semantic": evaluate_search(Catalog(tools, semantic=semantic), cases, repeats=1),
    }
    assert (reports["lexical"].top1, reports["semantic"].top1) == (0.0, 1.0)
    lines = compare_reports(reports).splitlines()
    assert lines[0].split() == ["figure", "lexical", "semantic"]
    [top1] = [line for line in lines if line.startswith("top-1")]
    assert top1.split() == ["top-1", "0.0%", "100.0%"]


def test_a_query_file_is_validated_case_by_case(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"query": "commit logs", "accept": ["git.git_log"], "kind": "paraphrase"}]))
    assert load_search_cases(good)[0].kind == "paraphrase"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"query": "", "answers": []}]))
    with pytest.raises(ValidationError, match="answers"):
        load_search_cases(bad)
