"""Search by meaning: the fusion, the switch, the model's lifecycle, with a small fake embedder.

The fake (tests/catalog/fake_embedder.py) reads meaning as a few hand-made groups of words, so these
tests run without the model; tests/catalog/test_minilm.py runs the real model where it is installed.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from mcp.types import Tool

from gateway.calls._gateway import Gateway
from gateway.catalog import _semantic
from gateway.catalog._catalog import Catalog
from gateway.catalog._search import Hit, search, tool_text, warm_search
from gateway.catalog._semantic import Fusion, SemanticSearch, fuse, semantic_search
from gateway.catalog.config import SearchConfig
from gateway.children import ChildState, ChildStatus
from gateway.config import parse_config
from gateway.errors import ConfigError
from tests.catalog.fake_embedder import FakeEmbedder
from tests.real_servers import REPO


def tool(name: str, description: str, **properties: str) -> Tool:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in properties.items()},
    }
    return Tool(name=name, description=description, input_schema=schema)


TOOLS = {
    "meteo": [tool("get_forecast", "The forecast for a city.", city="City name")],
    "shop": [tool("create_invoice", "Bill a customer for an order.", customer="Customer id")],
    "notes": [tool("write_note", "Write a note.", text="The text"), tool("list_notes", "List the notes.")],
}


def loaded(embedder: FakeEmbedder | None = None) -> SemanticSearch:
    semantic = SemanticSearch(lambda: embedder or FakeEmbedder())
    assert semantic.load(timeout=10) is not None
    return semantic


def names(catalog: Catalog, query: str, **kwargs: object) -> list[str]:
    return [hit.entry.qualified for hit in search(catalog, query, **kwargs)]  # type: ignore[arg-type]


def test_fusion_ranks_every_tool_by_words_and_meaning_together() -> None:
    # Tool 0 matches the words best but means little; tools 2 and 3 matched no word, 3 means the most.
    lexical = [(0, 10.0), (1, 5.0)]
    similarities = [0.1, 0.9, 0.5, 0.95]
    ranked = fuse(lexical, similarities)
    assert [i for i, _ in ranked] == [1, 3, 2, 0]  # every tool, not only the lexical candidates
    assert ranked[0][1] == pytest.approx(0.2 * 0.5 + 0.8 * 0.9)
    assert [i for i, _ in fuse(lexical, similarities, weights=Fusion(lexical=1.0))][:2] == [0, 1]
    assert [i for i, _ in fuse(lexical, similarities, allowed=lambda i: i != 3)] == [1, 2, 0]


def test_rank_fusion_counts_each_ranking_by_position_not_by_score() -> None:
    lexical = [(0, 100.0), (1, 1.0)]
    similarities = [0.3, 0.31, 0.9]
    ranked = fuse(lexical, similarities, weights=Fusion(lexical=0.5, method="ranks", rank_constant=1))
    # Tool 1 is second by words and second by meaning; tool 0 first by words, third by meaning.
    assert [i for i, _ in ranked] == [0, 1, 2]
    assert ranked[0][1] == pytest.approx(0.5 / 2 + 0.5 / 4)


def test_a_tool_sharing_no_word_with_the_query_is_found_by_its_meaning() -> None:
    lexical = Catalog(TOOLS)
    assert "meteo.get_forecast" not in names(lexical, "do I need an umbrella")
    semantic = Catalog(TOOLS, semantic=loaded())
    hits = search(semantic, "do I need an umbrella")
    assert hits[0].entry.qualified == "meteo.get_forecast"
    assert hits[0].similarity == pytest.approx(1.0)
    assert not hits[0].weak


def test_words_and_meaning_both_count() -> None:
    # "note" is a word of both notes tools; "write" only of one: the words break the tie of meaning.
    assert names(Catalog(TOOLS, semantic=loaded()), "write a note")[0] == "notes.write_note"


def test_a_tool_named_exactly_comes_first_whatever_its_meaning() -> None:
    # Meaning alone ties the two notes tools, and the tie goes to the one listed first.
    semantic = SemanticSearch(FakeEmbedder, Fusion(lexical=0.0))
    catalog = Catalog(TOOLS, semantic=semantic)
    assert semantic.load(timeout=10) is not None
    assert names(catalog, "notes jot")[:2] == ["notes.write_note", "notes.list_notes"]
    hits = search(catalog, "notes.list_notes")
    assert hits[0].entry.qualified == "notes.list_notes"
    assert not hits[0].weak


def test_a_server_filter_keeps_the_semantic_candidates_to_that_server() -> None:
    catalog = Catalog(TOOLS, semantic=loaded())
    assert set(names(catalog, "do I need an umbrella", server="notes")) <= {
        "notes.write_note",
        "notes.list_notes",
    }


def test_a_search_by_meaning_answers_up_to_the_limit_from_the_whole_catalog() -> None:
    catalog = Catalog(TOOLS, semantic=loaded())
    assert len(search(catalog, "notes", limit=1)) == 1
    assert len(search(catalog, "notes", limit=10)) == 4


def test_a_best_hit_far_in_meaning_is_reported_weak() -> None:
    catalog = Catalog({"shop": TOOLS["shop"], "notes": TOOLS["notes"]}, semantic=loaded())
    hits = search(catalog, "do I need an umbrella")
    assert hits
    assert hits[0].weak


def test_a_best_hit_is_weak_when_the_next_tool_is_far_and_fits_when_it_comes_close() -> None:
    entry = Catalog(TOOLS).entries[0]
    # The same fused score, cosine and words matched: a request some tool serves has that tool's
    # neighbours near it too; one no tool serves is near a single tool by chance.
    alone = Hit(entry, score=0.45, coverage=0.3, similarity=0.3, runner_up=0.25)
    among_neighbours = dataclasses.replace(alone, runner_up=0.45)
    assert alone.weak
    assert not among_neighbours.weak
    assert not dataclasses.replace(alone, coverage=1.0).weak  # every word of the query matched


def test_each_hit_by_meaning_carries_the_score_of_the_tool_after_it_even_at_limit_one() -> None:
    catalog = Catalog(TOOLS, semantic=loaded())
    two = search(catalog, "write a note", limit=2)
    assert two[0].runner_up == two[1].score
    assert search(catalog, "write a note", limit=1)[0].runner_up == two[0].runner_up
    assert search(Catalog(TOOLS), "write a note")[0].runner_up is None  # lexical search keeps its rule


def test_tools_are_embedded_once_per_catalog_and_filtered_catalogs_keep_the_model() -> None:
    embedder = FakeEmbedder()
    catalog = Catalog(TOOLS, semantic=loaded(embedder))
    warm_search(catalog)
    search(catalog, "umbrella")
    search(catalog, "pay the bill")
    assert embedder.encoded == [[tool_text(entry) for entry in catalog.entries]]
    assert len(embedder.queries) == 2
    narrower = catalog.filtered(lambda entry: entry.server_id != "shop")
    assert narrower.semantic is catalog.semantic
    assert names(narrower, "pay the bill")[0] != "shop.create_invoice"
    assert len(embedder.encoded) == 2  # the filtered catalog's own tools


def test_the_tool_text_holds_name_words_server_title_summary_and_parameters() -> None:
    entry = Catalog(TOOLS).get("meteo.get_forecast")
    assert entry is not None
    assert tool_text(entry) == "get forecast (meteo). The forecast for a city. Parameters: city"


def test_search_stays_lexical_until_the_model_is_loaded_which_the_first_search_starts() -> None:
    release = threading.Event()
    embedder = FakeEmbedder()

    def slow_load() -> FakeEmbedder:
        assert release.wait(timeout=10)
        return embedder

    semantic = SemanticSearch(slow_load)
    catalog = Catalog(TOOLS, semantic=semantic)
    hits = search(catalog, "write a note")
    assert hits
    assert all(hit.similarity is None for hit in hits)  # lexical, and not kept waiting
    assert semantic.load(timeout=0.01) is None  # loading, on its own thread
    release.set()
    assert semantic.load(timeout=10) is embedder
    assert search(catalog, "write a note")[0].similarity is not None


def test_a_model_that_fails_to_load_leaves_search_lexical_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> FakeEmbedder:
        raise OSError("model.safetensors is truncated")

    semantic = SemanticSearch(broken)
    with caplog.at_level(logging.ERROR, logger="gateway.search"):
        assert semantic.load(timeout=10) is None
        assert semantic.load(timeout=10) is None
    assert isinstance(semantic.error, OSError)
    assert [r.getMessage() for r in caplog.records] == [
        "the semantic search model failed to load; search stays lexical"
    ]
    hits = search(Catalog(TOOLS, semantic=semantic), "write a note")
    assert hits[0].entry.qualified == "notes.write_note"
    assert hits[0].similarity is None


def test_a_load_cut_short_by_the_gateway_closing_is_not_reported_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def interrupted() -> FakeEmbedder:
        raise RuntimeError("can't register atexit after shutdown")

    semantic = SemanticSearch(interrupted)
    semantic.close()
    with caplog.at_level(logging.DEBUG, logger="gateway.search"):
        assert semantic.load(timeout=10) is None
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "the semantic search model stopped loading as the gateway closed")
    ]


@pytest.fixture
def not_yet_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not logged the lexical fallback yet (it is said once per process)."""
    monkeypatch.setattr(_semantic, "_said_lexical", threading.Event())


def _lexical_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if "search is lexical" in r.getMessage()]


def test_the_default_is_auto_and_with_the_extra_installed_it_re_ranks() -> None:
    assert SearchConfig().semantic == "auto"
    assert isinstance(semantic_search(SearchConfig().semantic), SemanticSearch)


def test_off_is_lexical_even_with_the_extra_installed(
    caplog: pytest.LogCaptureFixture, not_yet_said: None
) -> None:
    assert semantic_search("off") is None
    assert _lexical_lines(caplog) == []


def test_auto_without_onnxruntime_is_lexical_and_says_once_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, not_yet_said: None
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # not importable, as where it has no wheel
    with caplog.at_level(logging.INFO, logger="gateway.search"):
        assert semantic_search("auto") is None
        assert semantic_search("auto") is None  # a second gateway in the process: not said again
    [(level, line)] = _lexical_lines(caplog)
    assert level == logging.WARNING
    assert "the search model's runtime is not installed (missing: onnxruntime)" in line
    assert "pip install 'onnxruntime>=1.32' 'tokenizers>=0.23' 'numpy>=2'" in line


def test_the_install_hint_names_each_runtime_module_with_the_lower_bound_every_install_requires() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    bounds = dict(spec.split(",")[0].split(">=") for spec in project["dependencies"] if ">=" in spec)
    hint = _semantic._INSTALL_HINT  # pyright: ignore[reportPrivateUsage]
    for module in _semantic.EXTRA_MODULES:
        assert f"'{module}>={bounds[module]}'" in hint


def test_auto_without_the_built_model_is_lexical_and_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture, not_yet_said: None
) -> None:
    monkeypatch.setattr(_semantic, "MODEL_DIR", tmp_path)
    with caplog.at_level(logging.INFO, logger="gateway.search"):
        assert semantic_search("auto") is None
    [(_, line)] = _lexical_lines(caplog)
    assert (
        f"the search model is not built (missing: all-minilm-l6-v2-int8.onnx, tokenizer.json in {tmp_path})"
        in line
    )
    assert "make setup" in line


def test_on_without_the_models_runtime_refuses_to_start_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    config = parse_config({"mcpServers": {}, "search": {"semantic": "on"}}, "t")
    with pytest.raises(ConfigError, match=r"pip install .*'tokenizers>=0\.23'") as raised:
        Gateway(config)
    refusal = "search.semantic is 'on' but the search model's runtime is not installed (missing: tokenizers)"
    assert refusal in str(raised.value)
    assert "set search.semantic to 'auto'" in str(raised.value)


def test_an_unknown_semantic_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"search\.semantic"):
        parse_config({"mcpServers": {}, "search": {"semantic": "yes"}}, "t")


def test_a_servers_own_words_on_what_it_is_for_are_embedded_with_each_of_its_tools() -> None:
    purpose = "Forecasts for any city on Earth. " + "More usage notes follow. " * 20
    status = ChildStatus("meteo", "stdio", ChildState.READY, instructions=purpose)
    embedder = FakeEmbedder()
    catalog = Catalog(
        {"meteo": TOOLS["meteo"]}, [status], semantic=loaded(embedder), instructions_chars=2_000
    )
    warm_search(catalog)
    assert embedder.encoded == [
        ["get forecast (meteo: Forecasts for any city on Earth.). The forecast for a city. Parameters: city"]
    ]


def test_past_the_first_five_a_tool_sharing_no_word_and_scoring_far_below_the_best_is_left_out() -> None:
    notes = [tool(f"note_{n}", f"Keep note {n}.") for n in "abcdefg"]
    weather = [tool(f"forecast_{n}", "The forecast for a city.") for n in "xyz"]
    catalog = Catalog({"notes": notes, "meteo": weather}, semantic=loaded())
    found = names(catalog, "note", limit=50)
    assert sorted(found) == sorted(f"notes.note_{n}" for n in "abcdefg")  # not the three forecasts
    # Found by meaning alone, the forecasts are kept; so are the first five, whatever they score.
    assert names(catalog, "umbrella", limit=50) == [
        "meteo.forecast_x",
        "meteo.forecast_y",
        "meteo.forecast_z",
        "notes.note_a",
        "notes.note_b",
    ]
