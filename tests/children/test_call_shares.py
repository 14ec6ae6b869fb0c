"""One caller's calls never hold every one of a child's call slots: past its share (all but one) they
wait in its own queue while another caller's call goes through; a call without a caller may use every
slot; a call whose deadline passes waiting for its share says which limit held it.

The child is a real process (tests/servers/latch_server.py): its `wait_for(path)` holds a call until
the test creates the file, so nothing here waits on the clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.children import ChildPool
from gateway.config import parse_config
from gateway.shared import ShareWaitTimedOut
from tests.children.test_pool import pool_for, text_of
from tests.e2e.gateway_process import python_child
from tests.real_servers import SERVERS

pytestmark = pytest.mark.anyio

LATCH: dict[str, Any] = python_child(SERVERS / "latch_server.py")
WAIT = 60  # bounds a hang (the child starts in about a second), never a race


@asynccontextmanager
async def latch_pool(max_concurrent_calls: int) -> AsyncIterator[ChildPool]:
    config = parse_config({"mcpServers": {"latch": LATCH}}, "test")
    async with pool_for(config, max_concurrent_calls=max_concurrent_calls) as pool:
        assert await pool.wait_ready(WAIT)
        yield pool


async def held_call(pool: ChildPool, holder: Hashable | None, path: Path) -> str:
    """A call of `wait_for` that the child holds until the file at `path` exists."""
    return text_of(await pool.call_tool("latch", "wait_for", {"path": str(path)}, holder=holder))


async def until_exists(path: Path) -> None:
    while not await anyio.Path(path).exists():  # noqa: ASYNC110 (the child makes it)
        await anyio.sleep(0.02)


async def until_waiting_for_share(pool: ChildPool, count: int) -> None:
    shares = pool._child("latch").call_shares
    while shares.waiting() < count:  # noqa: ASYNC110 (the shares' counts have no event to wait for)
        await anyio.sleep(0.01)


async def test_another_callers_call_goes_through_while_one_caller_fills_every_slot_it_can(
    tmp_path: Path,
) -> None:
    answers: list[str] = []
    paths = [tmp_path / f"alice-{n}" for n in range(3)]
    with anyio.fail_after(WAIT):
        async with latch_pool(3) as pool, anyio.create_task_group() as group:

            async def alice(path: Path) -> None:
                answers.append(await held_call(pool, "alice", path))

            for path in paths:
                group.start_soon(alice, path)
            await until_waiting_for_share(pool, 1)  # two calls in the child, the third in alice's queue
            await until_exists(Path(f"{paths[0]}.waiting"))
            await until_exists(Path(f"{paths[1]}.waiting"))
            bob = await pool.call_tool("latch", "echo", {"text": "bob served"}, holder="bob")
            assert text_of(bob) == "bob served"
            assert not await anyio.Path(f"{paths[2]}.waiting").exists()  # alice's third is still in her queue
            for path in paths:
                path.touch()
    assert answers == ["released"] * 3
    assert len(pool._child("latch").call_shares) == 0


async def test_calls_without_a_caller_may_use_every_slot(tmp_path: Path) -> None:
    paths = [tmp_path / f"stdio-{n}" for n in range(2)]
    with anyio.fail_after(WAIT):
        async with latch_pool(2) as pool, anyio.create_task_group() as group:
            for path in paths:
                group.start_soon(held_call, pool, None, path)
            for path in paths:  # both in the child at once
                await until_exists(Path(f"{path}.waiting"))
            for path in paths:
                path.touch()


async def test_a_lone_caller_of_a_child_with_one_slot_gets_it(tmp_path: Path) -> None:
    path = tmp_path / "alone"
    path.touch()
    with anyio.fail_after(WAIT):
        async with latch_pool(1) as pool:
            assert await held_call(pool, "alice", path) == "released"


async def test_a_call_timing_out_while_it_waits_for_its_callers_share_names_the_limit(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    with anyio.fail_after(WAIT):
        async with latch_pool(2) as pool, anyio.create_task_group() as group:
            group.start_soon(held_call, pool, "alice", first)
            await until_exists(Path(f"{first}.waiting"))

            async def alice_again() -> None:
                with anyio.fail_after(0.05):  # it cannot go through before the first is released
                    await held_call(pool, "alice", second)

            with pytest.raises(ShareWaitTimedOut) as waited:
                await alice_again()
            first.touch()
            assert str(waited.value) == (
                "waiting for its caller's share of latch's call slots (max_concurrent_calls = 2: one "
                "caller holds at most 1 at once)"
            )
    assert not await anyio.Path(f"{second}.waiting").exists()
