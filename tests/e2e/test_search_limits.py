"""search_docs under hostile queries, through the real gateway process: refused past the cap."""

from __future__ import annotations

import random
import string
from pathlib import Path

import anyio
import pytest

from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from tests.e2e.gateway_process import EVERYTHING, WAIT, execute, search_docs, session, text, write_config

pytestmark = pytest.mark.anyio


def _random_words(count: int, length: int) -> str:
    rng = random.Random(3)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(length)) for _ in range(count))


async def test_a_query_past_the_cap_is_refused_naming_the_limit_and_the_gateway_serves_on(
    tmp_path: Path,
) -> None:
    # Any child will do: the Node one, which starts on the least CPU.
    config = write_config(tmp_path, {"mcpServers": {"everything": EVERYTHING}}, default_search=True)
    async with session(config) as client:
        with anyio.fail_after(WAIT):
            refused = await client.call_tool("search_docs", {"query": _random_words(12, 10_000)})
            at_cap = await client.call_tool("search_docs", {"query": _random_words(12, 82)})
            found = await search_docs(client, "echo")
        ran = await execute(client, "1 + 1")
    assert refused.is_error
    assert f"over search.max_query_chars ({DEFAULT_MAX_QUERY_CHARS:,})" in text(refused)
    assert len(text(refused)) < 300  # the query is not echoed back
    assert not at_cap.is_error
    assert "max_query_chars" not in text(at_cap)  # answered by search (lexical or by meaning), not refused
    assert "everything.echo" in found
    assert ran["ok"]
    assert ran["value"] == 2
