"""Spent approvals: a nonce is spent once, in this process or across every process on one store."""

from __future__ import annotations

import anyio
import pytest

from gateway.state import SharedState
from gateway.state._approvals import RedisSpentApprovals
from tests.state.redis_server import patient
from tests.state.stores import WAIT, stores_of

pytestmark = pytest.mark.anyio


async def test_a_nonce_is_spent_once_and_a_second_spend_is_refused(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            assert await stores.approvals.spend("nonce-a", 60) is True
            assert await stores.approvals.spend("nonce-a", 60) is False
            assert await stores.approvals.spend("nonce-b", 60) is True


async def test_a_spent_nonce_is_forgotten_once_its_state_would_have_expired(store_url: str | None) -> None:
    async with stores_of(store_url) as stores:
        with anyio.fail_after(WAIT):
            assert await stores.approvals.spend("short", 0.05) is True
            while not await stores.approvals.spend("short", 0.05):  # noqa: ASYNC110  (its lifetime passes)
                await anyio.sleep(0.02)


async def test_two_processes_on_one_store_spend_a_nonce_once_between_them_even_at_the_same_moment(
    redis_url: str,
) -> None:
    config = patient(redis_url)
    outcomes: list[bool] = []
    with anyio.fail_after(WAIT):
        async with SharedState.connected(config) as one, SharedState.connected(config) as two:
            spenders = [RedisSpentApprovals(one), RedisSpentApprovals(two)] * 5

            async def spend(spender: RedisSpentApprovals) -> None:
                outcomes.append(await spender.spend("contested", 60))

            async with anyio.create_task_group() as tg:
                for spender in spenders:
                    tg.start_soon(spend, spender)
    assert sorted(outcomes) == [False] * 9 + [True]
