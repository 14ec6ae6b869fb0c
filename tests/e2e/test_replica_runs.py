"""Background runs across three real replicas sharing one real `redis-server` (`state`), behind a
real HAProxy: a run started on one replica is read, collected and cancelled on the others (addressed
directly, so "another replica" is certain, and through the balancer), and a replica killed with
SIGKILL mid-run leaves its run reported ended ("its replica stopped") once its lease lapses.

One cluster serves the module (its ledger child served once over HTTP from the test process, for
every replica); the test that kills a replica starts a fourth of its own beside it, on the same store
and config, and kills that one. Each test counts only the ledger entries written after
it began.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.gateway_http import HttpGateway
from tests.e2e.gateway_process import (
    WAIT,
    environment,
    ledger_entries,
    text,
    write_config,
)
from tests.e2e.http_children import ledger_over_http
from tests.e2e.load_balancer import HAPROXY, Frontend, free_ports, haproxy, replicas
from tests.e2e.load_balancer import NOT_INSTALLED as NO_HAPROXY
from tests.e2e.test_background import GetTask, TaskId, Tasks, TaskState, released
from tests.state.redis_server import NOT_INSTALLED as NO_REDIS
from tests.state.redis_server import REDIS_SERVER, own_redis_server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(HAPROXY is None, reason=NO_HAPROXY),
    pytest.mark.skipif(REDIS_SERVER is None, reason=NO_REDIS),
]

REPLICAS = 3
ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40
LEASE_SECONDS = 3.0  # short, so a dead replica's run reads ended soon; renewed every second
# Held in its child call until the test lets it finish (`released`), once a collect waits for its end.
SLOW = "tools.ledger.append(entry='slow started')\ntools.ledger.wait_for(path={release!r})\n'slow finished'"
FOREVER = "tools.ledger.append(entry='{name} started')\ntools.ledger.slow(seconds=120)\n'never'"


def replica_config(directory: Path, children: dict[str, Any], redis_url: str) -> Path:
    """What every replica reads (the same bytes), in a directory of the replica's own."""
    directory.mkdir()
    return write_config(
        directory,
        {
            "mcpServers": children,
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
            "state": {"url": redis_url, "key_prefix": "replica-runs:"},
            "background": {"lease_seconds": LEASE_SECONDS, "max_running": 4, "max_running_per_caller": 4},
        },
    )


@asynccontextmanager
async def client_at(url: str, token: str = ALICE, *, tasks: bool = False) -> AsyncIterator[Client]:
    """The SDK's Client on `url` (2026-07-28); with `tasks`, declaring the tasks extension, so that
    tasks/get answers (and `background: true` would answer a task handle, not an id)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), headers=headers) as http,
        Client(
            streamable_http_client(url, http_client=http),
            read_timeout_seconds=WAIT,
            extensions=[Tasks()] if tasks else None,
        ) as client,
    ):
        yield client


async def start(url: str, code: str) -> str:
    """Start `code` with `background: true` on `url`; the id the answer gives."""
    async with client_at(url) as client:
        started = await client.call_tool("execute_code", {"code": code, "background": True})
    found = re.search(r'Started in the background as "([^"]+)"', text(started))
    assert found is not None, text(started)
    return found.group(1)


async def call(url: str, arguments: dict[str, Any], token: str = ALICE) -> types.CallToolResult:
    async with client_at(url, token) as client:
        return await client.call_tool("execute_code", arguments)


async def collect(url: str, execution_id: str) -> types.CallToolResult:
    """`collect` on `url`, again while it answers that the run is still running (it waits a while
    each time)."""
    while "Collect it again later" in text(answer := await call(url, {"collect": execution_id})):
        pass
    return answer


async def task(url: str, execution_id: str) -> TaskState:
    async with client_at(url, tasks=True) as client:
        return await client.session.send_request(GetTask(params=TaskId(task_id=execution_id)), TaskState)


async def ledger_has(directory: Path, entry: str) -> None:
    while entry not in ledger_entries(directory):  # noqa: ASYNC110 (another process writes the file)
        await anyio.sleep(0.1)


def urls(gateways: list[HttpGateway]) -> list[str]:
    return [gateway.url for gateway in gateways]


@dataclass
class Cluster:
    """Three replicas on one redis-server, HAProxy round robin in front, and what they share."""

    gateways: list[HttpGateway]
    balanced: str  # the balancer's URL
    home: Path  # the ledger, and a directory per replica
    env: dict[str, str]
    redis_url: str
    children: dict[str, Any]  # the ledger server, served over HTTP from this process
    ledger_from: int = 0  # ledger entries written before the running test began

    def ledger(self) -> list[str]:
        """The ledger entries of the running test."""
        return ledger_entries(self.home)[self.ledger_from :]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one cluster serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    home = tmp_path_factory.mktemp("replica-runs")
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    (port,) = free_ports(1)
    with own_redis_server() as redis:
        async with ledger_over_http(home) as children:
            configs = [replica_config(home / f"replica-{i}", children, redis.url) for i in range(REPLICAS)]
            async with replicas(configs, env) as gateways:
                addresses = [gateway.url.split("/")[2] for gateway in gateways]
                async with haproxy(home, [Frontend("runs", port, addresses, sticky=False)]):
                    balanced = f"http://127.0.0.1:{port}/mcp"
                    yield Cluster(gateways, balanced, home, env, redis.url, children)


@pytest.fixture
def cluster(shared_cluster: Cluster) -> Cluster:
    """The module's cluster, counting ledger entries from this test on."""
    shared_cluster.ledger_from = len(ledger_entries(shared_cluster.home))
    return shared_cluster


async def test_a_run_started_on_one_replica_is_collected_and_cancelled_on_the_others(
    cluster: Cluster,
) -> None:
    balanced, home = cluster.balanced, cluster.home
    first, second, third = urls(cluster.gateways)
    release, answers = home / "slow.release", list[types.CallToolResult]()
    with anyio.fail_after(WAIT):
        slow = await start(first, SLOW.format(release=str(release)))
        refused = await call(third, {"collect": slow}, token=BOB)
        async with anyio.create_task_group() as collecting:

            async def collect_on_second() -> None:
                answers.append(await collect(second, slow))  # waits on another replica for the end

            collecting.start_soon(collect_on_second)
            await anyio.wait_all_tasks_blocked()  # the collect is asked
            await released(release)
        [collected] = answers
        through_balancer = await collect(balanced, slow)
        finished = await task(third, slow)

        forever = await start(first, FOREVER.format(name="forever"))
        await ledger_has(home, "forever started")  # in its 120 s child call on the first
        while_running = await task(second, forever)
        cancelled = await call(third, {"cancel": forever})
        after_cancel = await task(second, forever)

        balanced_run = await start(balanced, FOREVER.format(name="balanced"))
        await ledger_has(home, "balanced started")
        cancelled_via_balancer = await call(balanced, {"cancel": balanced_run})
        read_directly = [await task(url, balanced_run) for url in (first, second, third)]

    assert while_running.status == "working"
    assert refused.is_error
    assert "another caller started it" in text(refused)
    assert not collected.is_error, text(collected)
    assert text(collected) == "'slow finished'"
    assert text(through_balancer) == "'slow finished'"
    assert finished.status == "completed"
    assert finished.result is not None
    assert finished.result["content"] == [{"type": "text", "text": "'slow finished'"}]

    assert "is cancelled" in text(cancelled), text(cancelled)
    assert after_cancel.status == "cancelled"
    assert "is cancelled" in text(cancelled_via_balancer), text(cancelled_via_balancer)
    assert {state.status for state in read_directly} == {"cancelled"}
    entries = cluster.ledger()
    assert sorted(entries) == ["balanced started", "forever started", "slow started"], entries


async def test_a_replica_killed_mid_run_leaves_its_run_ended_because_its_replica_stopped(
    cluster: Cluster,
) -> None:
    config = replica_config(cluster.home / "doomed", cluster.children, cluster.redis_url)
    async with replicas([config], cluster.env) as (doomed,):
        survivor, other = cluster.gateways[:2]
        with anyio.fail_after(WAIT):
            execution_id = await start(doomed.url, FOREVER.format(name="doomed"))
            await ledger_has(cluster.home, "doomed started")
            before = await task(survivor.url, execution_id)
            doomed.process.kill()  # SIGKILL: no shutdown, no end written, the lease is left to lapse
            await doomed.process.wait()
            while (state := await task(other.url, execution_id)).status == "working":  # noqa: ASYNC110
                await anyio.sleep(0.2)  # until the lease lapses
            collected = await collect(survivor.url, execution_id)
            after = await call(
                survivor.url, {"code": "tools.ledger.slow(seconds=0)['result'] + ' still serving'"}
            )

    assert before.status == "working"
    assert collected.is_error
    assert "its replica stopped" in text(collected), text(collected)
    assert "unknown" not in text(collected)
    assert state.status == "failed"
    assert state.error is not None
    assert "its replica stopped" in state.error["message"]
    assert not after.is_error, text(after)
    assert "still serving" in text(after)
