"""Background results outlive the gateway process (without `state`): the real gateway, stopped and
started again on the same config and cache directory, still answers `collect` for a run that ended
before the restart, over stdio and over HTTP; and still only to the caller that started it."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import Client, types

from tests.e2e.gateway_http import http_client, http_gateway
from tests.e2e.gateway_process import (
    WAIT,
    environment,
    ledger_entries,
    sdk_client,
    text,
    write_config,
)
from tests.e2e.http_children import ledger_over_http

pytestmark = pytest.mark.anyio

ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40
SNIPPET = "tools.ledger.append(entry='ran once')\n{'answer': 42}"


def _started_id(result: types.CallToolResult) -> str:
    found = re.search(r'Started in the background as "([^"]+)"', text(result))
    assert found is not None, text(result)
    return found.group(1)


async def _start_and_see_it_end(client: Client, code: str = SNIPPET) -> tuple[str, str]:
    """Start `code` in the background and collect it once (so it has ended); its id and result."""
    started = await client.call_tool("execute_code", {"code": code, "background": True})
    execution_id = _started_id(started)
    collected = await client.call_tool("execute_code", {"collect": execution_id})
    assert not collected.is_error, text(collected)
    return execution_id, text(collected)


async def test_a_restarted_stdio_gateway_still_answers_collect_for_a_run_that_ended_before(
    tmp_path: Path,
) -> None:
    # The ledger child is served over HTTP from this process: both gateway processes reach the same one.
    async with ledger_over_http(tmp_path) as children:
        config = write_config(tmp_path, {"mcpServers": children})
        with anyio.fail_after(WAIT):
            async with sdk_client(config) as client:
                execution_id, before = await _start_and_see_it_end(client)
            async with sdk_client(config) as client:  # a new process on the same config and cache directory
                after = await client.call_tool("execute_code", {"collect": execution_id})
                unknown = await client.call_tool("execute_code", {"collect": "never-started"})
    assert not after.is_error, text(after)
    assert text(after) == before
    assert "42" in before
    assert unknown.is_error
    assert "the id is unknown" in text(unknown)
    assert ledger_entries(tmp_path) == ["ran once"]  # collected, not run again


async def test_after_a_restart_only_the_caller_that_started_a_run_collects_it(tmp_path: Path) -> None:
    tokens = {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}
    config = write_config(tmp_path, {"mcpServers": {}, "auth": {"tokens": tokens}})
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    with anyio.fail_after(WAIT):
        async with http_gateway(config, env=env) as gateway, http_client(gateway.url, token=ALICE) as alice:
            execution_id, before = await _start_and_see_it_end(alice, "{'answer': 42}")
        async with http_gateway(config, env=env) as gateway:
            async with http_client(gateway.url, token=BOB) as bob:
                refused = await bob.call_tool("execute_code", {"collect": execution_id})
                cancel_refused = await bob.call_tool("execute_code", {"cancel": execution_id})
            async with http_client(gateway.url, token=ALICE) as alice:
                after = await alice.call_tool("execute_code", {"collect": execution_id})
    assert refused.is_error
    assert cancel_refused.is_error
    for answer in (refused, cancel_refused):
        assert "another caller started it" in text(answer)
        assert "42" not in text(answer)
    assert not after.is_error, text(after)
    assert text(after) == before
