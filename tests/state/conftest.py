"""`store_url`: each behaviour test of a store runs on both kinds, in this process (None) and on Redis."""

from __future__ import annotations

import pytest

from tests.state.stores import KINDS


@pytest.fixture(params=KINDS)
def store_url(request: pytest.FixtureRequest) -> str | None:
    """None for the local stores; a flushed redis-server's URL for the Redis ones."""
    return request.getfixturevalue("redis_url") if request.param == "redis" else None
