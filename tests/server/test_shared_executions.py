"""Background runs shared through a real Redis (gateway/server/_shared_executions.py): two stores of
executions on one Redis stand for two replicas; what one runs, the other finds, collects and cancels,
and a run whose replica stopped renewing its lease reads as ended, never as unknown."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import types

from gateway.auth import STATIC_ISSUER, Owner
from gateway.config.server import BackgroundConfig
from gateway.errors import BackgroundRefused
from gateway.server._background import BackgroundExecution, BackgroundExecutions
from gateway.server._execution_store import ExecutionRecord
from gateway.server._shared_executions import SharedExecutions
from gateway.state import SharedState
from gateway.state.config import StateConfig
from tests.state.redis_server import NOT_INSTALLED, REDIS_SERVER, own_redis_server

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REDIS_SERVER is None, reason=NOT_INSTALLED)]

WAIT = 20.0
ALICE = Owner(STATIC_ISSUER, "alice")
BOB = Owner(STATIC_ISSUER, "bob")


class Forever:
    """Work that runs until cancelled, remembering that it was."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def __call__(self, execution: BackgroundExecution) -> types.CallToolResult:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


class Gate:
    """Work that ends with its text once let through."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.open = anyio.Event()

    async def __call__(self, execution: BackgroundExecution) -> types.CallToolResult:
        await self.open.wait()
        return types.CallToolResult(content=[types.TextContent(text=self.text)])


@asynccontextmanager
async def replicas(
    tmp_path: Path, count: int, **config: float
) -> AsyncIterator[tuple[list[BackgroundExecutions], StateConfig]]:
    """`count` stores of executions sharing one real Redis under a key prefix of this test's own,
    and the `state` section they were connected with."""
    background = BackgroundConfig.model_validate(config)
    with own_redis_server() as redis:
        async with AsyncExitStack() as stack:
            state = StateConfig(url=redis.url, key_prefix=f"test-{secrets.token_hex(4)}:")
            stores: list[BackgroundExecutions] = []
            for _ in range(count):
                shared = await stack.enter_async_context(SharedState.connected(state))
                executions = BackgroundExecutions(background)
                await stack.enter_async_context(executions.running(SharedExecutions(shared, background)))
                stores.append(executions)
            yield stores, state


async def test_a_run_started_on_one_replica_is_found_and_collected_on_another(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as ((one, other), _):
        work = Gate("done on one")
        started = await one.start(ALICE, work)
        with anyio.fail_after(WAIT):
            seen = await other.find(ALICE, started.id)
            assert seen.status == "working"
            assert one.runs_here(started)
            assert not other.runs_here(seen)  # a record read from the store: answers go to `one`
            work.open.set()
            collected = await other.wait_for(ALICE, started.id, None)
    assert collected.status == "completed"
    assert collected.result == types.CallToolResult(content=[types.TextContent(text="done on one")])


async def test_another_caller_is_refused_on_every_replica(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as ((one, other), _):
        started = await one.start(ALICE, Forever())
        with anyio.fail_after(WAIT):
            for replica in (one, other):
                with pytest.raises(BackgroundRefused, match="another caller started it"):
                    await replica.find(BOB, started.id)
                with pytest.raises(BackgroundRefused, match="another caller started it"):
                    await replica.cancel_anywhere(BOB, started.id)
            assert (await other.find(ALICE, started.id)).status == "working"


async def test_a_cancel_asked_on_another_replica_stops_the_run_where_it_runs(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as ((one, other), _):
        work = Forever()
        started = await one.start(ALICE, work)
        with anyio.fail_after(WAIT):
            await work.started.wait()
            await other.cancel_anywhere(ALICE, started.id)
            ended = await other.wait_for(ALICE, started.id, None)
            await started.done.wait()
    assert work.cancelled
    assert ended.status == "cancelled"
    assert ended.message is not None
    assert "cancelled (tasks/cancel or execute_code cancel)" in ended.message


async def test_a_run_whose_replica_stopped_renewing_reads_ended_once_its_lease_lapses(tmp_path: Path) -> None:
    async with (
        replicas(tmp_path, 1, lease_seconds=0.5) as ((other,), state),
        SharedState.connected(state) as shared,
    ):
        # The replica that started it died at once: its record and a lease no one renews.
        dead = SharedExecutions(shared, BackgroundConfig(lease_seconds=0.5))
        orphan = ExecutionRecord(
            id="orphan",
            issuer=ALICE.issuer,
            principal=ALICE.principal,
            created_at=datetime.now(UTC),
            status="working",
            message="running",
        )
        await dead.started(orphan)
        with anyio.fail_after(WAIT):
            ended = await other.wait_for(ALICE, "orphan", None)
            again = await other.find(ALICE, "orphan")
    assert ended.status == "failed"
    assert ended.message is not None
    assert "its replica stopped" in ended.message
    assert "background.lease_seconds" in ended.message
    assert (again.status, again.message) == (ended.status, ended.message)


async def test_with_the_store_down_a_lookup_names_the_state_store_and_local_runs_still_end(
    tmp_path: Path,
) -> None:
    background = BackgroundConfig()
    with own_redis_server() as redis:
        state = StateConfig(
            url=redis.url, key_prefix="down:", connect_timeout_seconds=0.5, command_timeout_seconds=0.5
        )
        async with SharedState.connected(state) as shared:
            executions = BackgroundExecutions(background)
            async with executions.running(SharedExecutions(shared, background)):
                redis.stop()
                with anyio.fail_after(WAIT):
                    with pytest.raises(BackgroundRefused, match=r"the state store \(state.url\) failed"):
                        await executions.find(ALICE, "elsewhere")
                    work = Gate("done here")
                    work.open.set()
                    started = await executions.start(ALICE, work)
                    ended = await executions.wait_for(ALICE, started.id, None)
    assert ended.status == "completed"
    assert ended.result == types.CallToolResult(content=[types.TextContent(text="done here")])
