"""Static tokens changed while an HTTP gateway serves: a token removed or added waits for an operator's
reload (the file watch refuses both: a removal picks which callers keep their reach), which applies it
without a restart; the work a removed token started reaches no child any more."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import TINY, WAIT, environment, ledger_entries, ledger_server, write_config
from tests.e2e.test_background import ALICE, BOB, audit_records, client_of, started_id
from tests.e2e.test_http import HANDSHAKE_HEADERS, INITIALIZE

pytestmark = pytest.mark.anyio

CAROL = "carol-token-" + "c" * 40
TOKENS = {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}", "carol": "${CAROL_TOKEN}"}


def team(directory: Path, *people: str, ledger: bool = False) -> Path:
    """The team's config with a static token for each of `people`; with `ledger`, over the ledger child
    and with an audit log."""
    auth = {"tokens": {person: TOKENS[person] for person in people}}
    if not ledger:
        return write_config(directory, {"mcpServers": {"tiny": TINY}, "auth": auth})
    servers = {"ledger": ledger_server(directory)}
    return write_config(
        directory, {"mcpServers": servers, "auth": auth, "audit": {"path": str(directory / "audit.jsonl")}}
    )


async def status(http: httpx2.AsyncClient, gateway: HttpGateway, token: str) -> int:
    headers = HANDSHAKE_HEADERS | {"authorization": f"Bearer {token}"}
    return (await http.post(gateway.url, json=INITIALIZE, headers=headers)).status_code


async def until_status(http: httpx2.AsyncClient, gateway: HttpGateway, token: str, expected: int) -> None:
    while await status(http, gateway, token) != expected:  # noqa: ASYNC110 (a reload of a file's change)
        await anyio.sleep(0.05)


async def test_tokens_removed_and_added_wait_for_an_operators_reload_which_applies_them_at_once(
    tmp_path: Path,
) -> None:
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB, "CAROL_TOKEN": CAROL})
    config = team(tmp_path, "alice", "bob")
    async with http_gateway(config, env=env) as gateway, httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            assert [await status(http, gateway, token) for token in (ALICE, BOB, CAROL)] == [200, 200, 401]
            team(tmp_path, "alice", "carol")  # bob leaves and carol joins: the watch refuses both
            await gateway.logged("config reload refused: the config in force serves on")
            assert [await status(http, gateway, token) for token in (ALICE, BOB, CAROL)] == [200, 200, 401]
            gateway.process.send_signal(signal.SIGHUP)  # the operator applies them
            await until_status(http, gateway, CAROL, 200)
            assert [await status(http, gateway, token) for token in (ALICE, BOB)] == [200, 401]


async def test_a_background_run_started_with_a_token_removed_since_reaches_no_child_afterwards(
    tmp_path: Path,
) -> None:
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    config = team(tmp_path, "alice", "bob", ledger=True)
    release = tmp_path / "release"
    code = f"tools.ledger.wait_for(path={str(release)!r})\ntools.ledger.note(entry='after the removal')"
    async with http_gateway(config, env=env) as gateway, httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            async with client_of(gateway, token=BOB, read_timeout=WAIT) as bob:
                started = await bob.call_tool("execute_code", {"code": code, "background": True})
                started_id(started)  # the run goes on without the request
            while not await anyio.Path(f"{release}.waiting").exists():  # noqa: ASYNC110 (the child makes it)
                await anyio.sleep(0.02)  # his run is in its first call
            team(tmp_path, "alice", ledger=True)  # bob's token leaves the file
            gateway.process.send_signal(signal.SIGHUP)  # and the operator applies it
            await until_status(http, gateway, BOB, 401)
            await anyio.Path(release).touch()  # his run goes on to its next call
            while not [r for r in audit_records(tmp_path, code) if r["kind"] == "execution"]:  # noqa: ASYNC110
                await anyio.sleep(0.05)  # the run's record is written as it ends
    calls = [record for record in audit_records(tmp_path, code) if record["kind"] == "tool_call"]
    assert [call["tool"] for call in calls] == ["ledger.wait_for", "ledger.note"], calls
    assert calls[1]["error"] == "ToolError", calls[1]  # refused before the child: the ledger holds nothing
    assert ledger_entries(tmp_path) == [], ledger_entries(tmp_path)
