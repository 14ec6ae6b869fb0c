"""Three gateway replicas behind a real HAProxy sharing one real `redis-server` (`state`).

What the issue measured without it (a rate of 4 allowing 4 per replica; a spent approval replayed
on another replica) is tried here with it, counted at the child: one ledger server, served over HTTP
from the test process, for every replica. Then the store is stopped: what needs it fails closed, what
does not goes on, and once it is back, calls succeed again. One cluster serves every test of the
module: each test begins on an emptied store and counts only the ledger entries and audit records
written after it began.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types

from tests.e2e.gateway_http import HttpGateway, User, http_client
from tests.e2e.gateway_process import (
    WAIT,
    environment,
    ledger_entries,
    text,
    write_config,
)
from tests.e2e.http_children import ledger_over_http
from tests.e2e.load_balancer import HAPROXY, NOT_INSTALLED, Frontend, free_ports, haproxy, replicas
from tests.state.redis_server import PATIENT, RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(HAPROXY is None, reason=NOT_INSTALLED)]

REPLICAS = 3
KEY_VAR = "CODEMODE_TEST_APPROVALS_KEY"
RATE = 4  # calls of ledger.note per minute, across every replica
CALLERS = 12  # side by side, round robin: 4 reach each replica
APPROVE = types.ElicitResult(action="accept", content={})


def replica_config(directory: Path, children: dict[str, Any], redis_url: str) -> Path:
    """What every replica reads (the same bytes), in a directory of its own for its audit log."""
    directory.mkdir()
    return write_config(
        directory,
        {
            "mcpServers": children,
            "policy": {
                "approve": ["ledger.append"],
                "tools": {"ledger.note": {"rate": {"calls": RATE, "per_seconds": 60}}},
            },
            "approvals": {"key": "${" + KEY_VAR + "}"},
            "state": {"url": redis_url, **PATIENT},
            "audit": {"path": "audit.jsonl"},
            "http": {  # every caller is the balancer's address: caps as high as the calls
                "max_executions_in_flight": 16,
                "max_executions_in_flight_per_caller": 16,
                "max_executions_queued": 64,
                "max_executions_queued_per_caller": 64,
            },
        },
    )


async def run(url: str, code: str) -> types.CallToolResult:
    async with http_client(url) as client:
        return await client.call_tool("execute_code", {"code": code, "details": True})


async def first_round(client: Client, code: str) -> types.InputRequiredResult:
    paused = await client.session.call_tool(
        "execute_code", {"code": code, "details": True}, allow_input_required=True
    )
    assert isinstance(paused, types.InputRequiredResult), paused
    return paused


async def resume(url: str, code: str, state: str | None) -> types.CallToolResult:
    async with http_client(url, elicitation=User()) as client:
        result = await client.session.call_tool(
            "execute_code",
            {"code": code, "details": True},
            input_responses={"approval": APPROVE},
            request_state=state,
            allow_input_required=True,
        )
    assert isinstance(result, types.CallToolResult), result
    return result


async def store_state(gateway: HttpGateway) -> str:
    async with httpx2.AsyncClient() as probe:
        return (await probe.get(f"{gateway.base}/readyz")).json()["state"]


async def wait_for_store(gateways: list[HttpGateway], state: str) -> None:
    for gateway in gateways:
        while await store_state(gateway) != state:  # noqa: ASYNC110  (the reconnect loop's backoff)
            await anyio.sleep(0.1)


class Cluster:
    """The replicas' URLs, HAProxy's round-robin frontend in front of them, and what reached their
    ledger and audit logs since the running test began (the cluster serves every test of the module)."""

    def __init__(self, gateways: list[HttpGateway], balanced: str, home: Path) -> None:
        self.gateways = gateways
        self.direct = [gateway.url for gateway in gateways]
        self.balanced = balanced
        self.home = home
        self._ledger_from = 0
        self._audit_from = [0] * len(gateways)

    def _audit_lines(self, replica: int) -> list[str]:
        path = self.home / f"replica-{replica}" / "audit.jsonl"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def begin_test(self) -> None:
        """From now on, ledger entries and audit records count for the test that begins."""
        self._ledger_from = len(ledger_entries(self.home))
        self._audit_from = [len(self._audit_lines(i)) for i in range(len(self.gateways))]

    def ledger(self) -> list[str]:
        """The ledger entries of the running test, oldest first."""
        return ledger_entries(self.home)[self._ledger_from :]

    def audit_counts(self) -> list[int]:
        """How many audit records each replica wrote in the running test."""
        return [len(self._audit_lines(i)) - self._audit_from[i] for i in range(len(self.gateways))]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one cluster serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def shared_cluster(
    tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer
) -> AsyncIterator[Cluster]:
    """Three replicas on the session's redis-server, HAProxy in front, for the whole module."""
    home = tmp_path_factory.mktemp("replicas-state")
    env = environment({KEY_VAR: secrets.token_hex(32)})
    [port] = free_ports(1)
    async with ledger_over_http(home) as children:
        configs = [replica_config(home / f"replica-{i}", children, redis_server.url) for i in range(REPLICAS)]
        async with replicas(configs, env) as gateways:
            addresses = [gateway.url.split("/")[2] for gateway in gateways]
            async with haproxy(home, [Frontend("plain", port, addresses, sticky=False)]):
                yield Cluster(gateways, f"http://127.0.0.1:{port}/mcp", home)


@pytest.fixture
async def cluster(shared_cluster: Cluster, redis_server: RedisServer) -> Cluster:
    """The module's cluster with its store running and emptied (no rate slot or spent approval of an
    earlier test), counting ledger entries and audit records from this test on."""
    if not redis_server.running:  # a test before this one stopped it
        redis_server.start()
    with anyio.fail_after(WAIT):
        await wait_for_store(shared_cluster.gateways, "ok")
    redis_server.flush()
    shared_cluster.begin_test()
    return shared_cluster


async def test_a_rate_holds_exactly_across_replicas_under_concurrent_callers(cluster: Cluster) -> None:
    results: dict[int, types.CallToolResult] = {}

    async def call(number: int) -> None:
        results[number] = await run(cluster.balanced, f"tools.ledger.note(entry='call-{number}')")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for number in range(CALLERS):
                tg.start_soon(call, number)

    succeeded = [n for n, result in results.items() if not result.is_error]
    refused = [text(result) for result in results.values() if result.is_error]
    assert len(succeeded) == RATE
    assert len(refused) == CALLERS - RATE
    assert all(f"rate limit of {RATE} calls per 60 seconds reached" in message for message in refused), (
        refused
    )
    assert sorted(cluster.ledger()) == sorted(f"call-{n}" for n in succeeded)
    served = cluster.audit_counts()
    assert all(served), served  # round robin: every replica took calls, and none let more through


async def test_an_approval_resumed_on_one_replica_is_refused_on_another_even_at_the_same_moment(
    cluster: Cluster,
) -> None:
    code = "import random\ntools.ledger.append(entry=f'approved {random.getrandbits(32)}')"
    outcomes: dict[str, Any] = {}
    first, second, third = cluster.direct
    with anyio.fail_after(WAIT):
        async with http_client(cluster.balanced, elicitation=User()) as client:
            one = await first_round(client, code)
            two = await first_round(client, code)
        outcomes["resumed"] = await resume(first, code, one.request_state)
        outcomes["replayed"] = await resume(second, code, one.request_state)

        async def contest(url: str) -> None:
            outcomes.setdefault("contested", []).append(await resume(url, code, two.request_state))

        async with anyio.create_task_group() as tg:
            tg.start_soon(contest, second)
            tg.start_soon(contest, third)

    assert not outcomes["resumed"].is_error, text(outcomes["resumed"])
    assert outcomes["replayed"].is_error
    assert "this approval was already used" in text(outcomes["replayed"])
    contested = sorted(outcomes["contested"], key=lambda result: bool(result.is_error))
    assert [bool(result.is_error) for result in contested] == [False, True]
    assert "this approval was already used" in text(contested[1])
    assert len(cluster.ledger()) == 2  # one call per state, though each was sent twice


async def test_the_store_stopped_fails_approvals_and_rates_closed_serves_the_rest_and_its_restart_is_survived(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    code = "tools.ledger.append(entry='approved once')"
    seen: dict[str, Any] = {}
    with anyio.fail_after(WAIT):
        async with http_client(cluster.balanced, elicitation=User()) as client:
            paused = await first_round(client, code)
        redis_server.stop()
        seen["rated"] = await run(cluster.balanced, "tools.ledger.note(entry='during')")
        seen["plain"] = await run(cluster.balanced, "tools.ledger.slow(seconds=0)['result'] + ' still here'")
        seen["resumed during"] = await resume(cluster.direct[0], code, paused.request_state)
        seen["ledger during"] = cluster.ledger()
        seen["readyz during"] = [await store_state(gateway) for gateway in cluster.gateways]
        redis_server.start()
        await wait_for_store(cluster.gateways, "ok")
        seen["rated after"] = await run(cluster.balanced, "tools.ledger.note(entry='after')")
        seen["resumed after"] = await resume(cluster.direct[1], code, paused.request_state)
        seen["replayed after"] = await resume(cluster.direct[2], code, paused.request_state)

    for key in ("rated", "resumed during"):
        result = seen[key]
        assert result.is_error, key
        message = text(result)
        assert f"the state store {redis_server.url} is unavailable" in message, message
        assert "state.url" in message, message
        assert "gateway/state" not in message
        assert "redis/" not in message
    assert not seen["plain"].is_error, text(seen["plain"])
    assert "still here" in text(seen["plain"])
    assert seen["ledger during"] == []  # nothing reached the child while the store was down
    assert "unavailable" in seen["readyz during"]
    assert not seen["rated after"].is_error, text(seen["rated after"])
    assert not seen["resumed after"].is_error, text(seen["resumed after"])  # never spent: it resumes now
    assert "already used" in text(seen["replayed after"])
    assert sorted(cluster.ledger()) == ["after", "approved once"]
