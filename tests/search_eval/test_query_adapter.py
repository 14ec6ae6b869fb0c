"""The shipped query adapter is what its committed script trains from the committed development sets."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.catalog._semantic import ADAPTER_FILE, SemanticSearch, semantic_installed, semantic_search
from tests.catalog.fake_embedder import FakeEmbedder
from tests.search_eval.train_adapter import MAX_DIFFERENCE, train, training_cases, training_set

pytestmark = pytest.mark.skipif(
    not semantic_installed(), reason="the search model or its runtime is not installed (make runtime)"
)


def test_the_shipped_adapter_is_what_the_training_script_produces() -> None:
    shipped = np.load(ADAPTER_FILE, allow_pickle=False)
    assert shipped.dtype == np.float16
    assert shipped.shape == (384, 384)  # MiniLM's dimensions
    retrained = train(training_set(training_cases()))
    assert np.abs(retrained.astype(np.float64) - shipped.astype(np.float64)).max() <= MAX_DIFFERENCE
    assert np.abs(shipped).max() > 0  # trained, not the identity


def test_the_default_config_searches_through_the_shipped_adapter_and_another_model_without_it() -> None:
    semantic = semantic_search("auto")
    assert semantic is not None
    assert semantic.load(timeout=300) is not None, semantic.error
    assert semantic.adapter is not None
    other = SemanticSearch(FakeEmbedder)  # an adapter is trained for one model: MiniLM's only
    assert other.load(timeout=10) is not None
    assert other.adapter is None
