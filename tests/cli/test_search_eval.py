"""`codemode-gateway search-eval`: search measured on a user's own queries, live children or snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.command import Commands
from tests.real_servers import TOOL_SNAPSHOTS

pytestmark = pytest.mark.anyio


def write_queries(tmp_path: Path, cases: list[dict[str, object]]) -> str:
    path = tmp_path / "queries.json"
    path.write_text(json.dumps(cases))
    return str(path)


async def test_it_scores_queries_on_saved_tool_lists_and_lists_the_misses(
    tmp_path: Path, commands: Commands
) -> None:
    queries = write_queries(
        tmp_path,
        [
            {"query": "commit history", "accept": ["git.git_log"]},
            {"query": "what time is it in Tokyo", "accept": ["time.get_current_time"]},
            {"query": "rename a file", "accept": ["memory.read_graph"]},  # a wrong answer: a miss
        ],
    )
    code, out, err = await commands.run(
        "search-eval", queries, "--snapshots", str(TOOL_SNAPSHOTS), "--misses"
    )
    assert code == 0, err
    assert "| top-3  " in out or "top-3" in out
    assert "66.7%" in out  # two of three
    # "miss:" alone, or "miss (lexical):" beside the semantic re-rank's where its extra is installed.
    misses = [line for line in out.splitlines() if line.startswith("miss")]
    assert misses
    assert all("'rename a file': wanted memory.read_graph; got filesystem.move_file" in m for m in misses)


async def test_it_scores_queries_on_a_configs_live_children(
    tmp_path: Path, npm_server: Callable[[str], dict[str, Any]], commands: Commands
) -> None:
    # A Node child: it starts for a fraction of a Python one's CPU.
    everything = npm_server("@modelcontextprotocol/server-everything")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    queries = write_queries(
        tmp_path, [{"query": "add two numbers together", "accept": ["everything.get_sum"]}]
    )
    code, out, err = await commands.run("search-eval", queries, "--config", str(config))
    assert code == 0, err
    assert "100.0%" in out
    assert "tools" in out


async def test_a_malformed_query_file_is_a_usage_error_naming_the_problem(
    tmp_path: Path, commands: Commands
) -> None:
    queries = write_queries(tmp_path, [{"question": "x"}])
    code, _, err = await commands.run("search-eval", queries, "--snapshots", str(TOOL_SNAPSHOTS))
    assert code == 2
    assert "is not a list of search cases" in err
    assert "query" in err
