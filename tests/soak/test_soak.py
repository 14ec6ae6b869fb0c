"""A short soak in the default suite: every response comes back once, to the right caller."""

from __future__ import annotations

import pytest

from tests.soak.run_soak import KINDS, matches, snippet, soak

pytestmark = pytest.mark.anyio


async def test_a_short_soak_loses_duplicates_and_crosses_no_response() -> None:
    # 20 of each kind past the warm-up's 2, 8 at a time over 4 slots and a queue: enough to cross
    # answers if they could be crossed (`make soak` runs 10,000).
    report = await soak(executions=100, concurrency=8, warmup=10)
    assert report.lost == 0
    assert report.duplicated == 0
    assert report.mismatched == 0
    assert report.rss_end_mib > 0


@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_to_another_request_does_not_match(kind: str) -> None:
    answers = {
        "plain": {"value": 8},
        "tool": {"value": [8, "UTC"]},
        "failing": {"error": {"type": "ValueError", "message": "request 8"}},
    }
    if kind in answers:
        assert matches(kind, 8, answers[kind])
        assert not matches(kind, 7, answers[kind])
    assert "8" in snippet(kind, 8)
