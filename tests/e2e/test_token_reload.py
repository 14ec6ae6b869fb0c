"""Static tokens changed while an HTTP gateway serves: a token removed is refused without a restart
(the file watch applies that); a token added waits for an operator's reload."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import TINY, WAIT, environment, write_config
from tests.e2e.test_background import ALICE, BOB
from tests.e2e.test_http import HANDSHAKE_HEADERS, INITIALIZE

pytestmark = pytest.mark.anyio

CAROL = "carol-token-" + "c" * 40
TOKENS = {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}", "carol": "${CAROL_TOKEN}"}


def team(directory: Path, *people: str) -> Path:
    """The team's config with a static token for each of `people`."""
    auth = {"tokens": {person: TOKENS[person] for person in people}}
    return write_config(directory, {"mcpServers": {"tiny": TINY}, "auth": auth})


async def status(http: httpx2.AsyncClient, gateway: HttpGateway, token: str) -> int:
    headers = HANDSHAKE_HEADERS | {"authorization": f"Bearer {token}"}
    return (await http.post(gateway.url, json=INITIALIZE, headers=headers)).status_code


async def until_status(http: httpx2.AsyncClient, gateway: HttpGateway, token: str, expected: int) -> None:
    while await status(http, gateway, token) != expected:  # noqa: ASYNC110 (a reload of a file's change)
        await anyio.sleep(0.05)


async def test_a_token_removed_is_refused_at_once_and_one_added_waits_for_an_operators_reload(
    tmp_path: Path,
) -> None:
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB, "CAROL_TOKEN": CAROL})
    config = team(tmp_path, "alice", "bob")
    async with http_gateway(config, env=env) as gateway, httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            assert [await status(http, gateway, token) for token in (ALICE, BOB, CAROL)] == [200, 200, 401]
            team(tmp_path, "alice")  # bob leaves the team: the file watch applies it
            await until_status(http, gateway, BOB, 401)
            assert await status(http, gateway, ALICE) == 200
            team(tmp_path, "alice", "carol")  # carol joins: the watch refuses to let anyone in
            await gateway.logged("config reload refused: the config in force serves on")
            assert await status(http, gateway, CAROL) == 401
            gateway.process.send_signal(signal.SIGHUP)  # the operator applies it
            await until_status(http, gateway, CAROL, 200)
            assert [await status(http, gateway, token) for token in (ALICE, BOB)] == [200, 401]
