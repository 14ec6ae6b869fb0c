"""The query adapter: `normalize(q + W q)` through the tool rows, and search ranking by it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.catalog._catalog import Catalog
from gateway.catalog._search import search
from gateway.catalog._semantic import SemanticSearch, load_query_adapter
from tests.catalog.fake_embedder import FakeEmbedder
from tests.catalog.test_semantic import TOOLS

np = pytest.importorskip("numpy")  # the adapter runs only where the model does, which brings numpy

from gateway.catalog._adapter import QueryAdapter  # noqa: E402


def test_the_adapted_similarity_is_the_cosine_of_the_adapted_query_to_each_tool() -> None:
    rng = np.random.default_rng(7)
    weights = 0.3 * rng.standard_normal((8, 8))
    tools = rng.standard_normal((5, 8))
    tools /= np.linalg.norm(tools, axis=1, keepdims=True)
    query = rng.standard_normal(8)
    query /= np.linalg.norm(query)
    adapter = QueryAdapter(weights)
    products = adapter.rows(tools) @ query  # what the embedder computes for the unadapted query
    adapted = query + weights @ query
    expected = tools @ (adapted / np.linalg.norm(adapted))
    assert np.allclose(adapter.similarities(products.tolist()), expected, atol=1e-5)
    assert len(adapter.similarities(products.tolist())) == len(tools)


def test_a_search_with_an_adapter_ranks_tools_by_the_adapted_query() -> None:
    # The fake's axes: weather, invoice, note, none. This W sends a query about the weather to invoices.
    weights = np.zeros((4, 4))
    weights[0, 0], weights[1, 0] = -1.0, 1.0
    plain = SemanticSearch(FakeEmbedder)
    adapted = SemanticSearch(FakeEmbedder, load_adapter=lambda: QueryAdapter(weights))
    for semantic in (plain, adapted):
        assert semantic.load(timeout=10) is not None
    query = "do I need an umbrella"
    assert search(Catalog(TOOLS, semantic=plain), query)[0].entry.qualified == "meteo.get_forecast"
    hits = search(Catalog(TOOLS, semantic=adapted), query)
    assert hits[0].entry.qualified == "shop.create_invoice"
    assert hits[0].similarity == pytest.approx(1.0)
    assert len(hits) == 4  # the adapter's own rows are never ranked as tools


def test_an_adapter_that_is_not_a_square_matrix_is_refused_naming_its_shape(tmp_path: Path) -> None:
    path = tmp_path / "query_adapter.npy"
    np.save(path, np.zeros((4, 3), dtype=np.float16))
    with pytest.raises(ValueError, match=r"must be a square matrix, not \(4, 3\)"):
        QueryAdapter.load(path)


def test_a_missing_adapter_file_leaves_queries_unadapted_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.search"):
        assert load_query_adapter(tmp_path / "absent.npy") is None
    assert "query adapter is missing" in caplog.text
