"""Each caller's share of a pool of places: all but one, its further requests in a queue of its own,
its entry kept only while it holds or waits for a place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import TaskGroup, TaskStatus

from gateway.shared import Shares, ShareWaitTimedOut, share_of

pytestmark = pytest.mark.anyio

WAIT = 10  # bounds a hang, never a race


async def _holding(
    shares: Shares, holder: Hashable | None, release: anyio.Event, *, task_status: TaskStatus[None]
) -> None:
    async with shares.held(holder):
        task_status.started()
        await release.wait()


@asynccontextmanager
async def holding(shares: Shares, *holders: Hashable | None) -> AsyncIterator[TaskGroup]:
    """`shares` with a place held for each of `holders` until the block ends; its task group, for more."""
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for holder in holders:
                await group.start(_holding, shares, holder, release)
            yield group
            release.set()


async def alice_takes(shares: Shares, taken: anyio.Event) -> None:
    """Alice asks for one more place, and says when she has it."""
    async with shares.held("alice"):
        taken.set()


def test_one_caller_may_hold_all_places_but_one_or_the_only_one() -> None:
    assert [share_of(places) for places in (1, 2, 4, 16)] == [1, 1, 3, 15]


async def test_a_caller_past_its_share_waits_while_another_caller_takes_a_place() -> None:
    shares = Shares(4)
    fourth = anyio.Event()

    async with holding(shares, "alice", "alice", "alice") as group:
        group.start_soon(alice_takes, shares, fourth)
        await anyio.wait_all_tasks_blocked()
        assert not fourth.is_set()  # alice's fourth waits in alice's own queue
        assert shares.waiting() == 1
        async with shares.held("bob"):
            assert shares.held_by("bob") == 1
    assert fourth.is_set()  # once her others were released
    assert len(shares) == 0


async def test_a_request_without_a_caller_takes_no_share() -> None:
    shares = Shares(4)
    async with holding(shares, None, None, None, None):
        assert len(shares) == 0


async def test_a_lone_caller_of_a_single_place_gets_it() -> None:
    shares = Shares(1)
    with anyio.fail_after(WAIT):
        async with shares.held("alice"):
            assert shares.held_by("alice") == 1


async def test_entries_are_dropped_once_their_caller_holds_and_waits_for_nothing() -> None:
    shares = Shares(2)
    async with holding(shares, *(f"caller-{caller}" for caller in range(50))):
        assert len(shares) == 50
    assert len(shares) == 0


async def test_a_wait_given_up_leaves_no_entry_behind() -> None:
    shares = Shares(2)
    async with holding(shares, "alice"):
        with anyio.move_on_after(0):
            async with shares.held("alice"):
                pytest.fail("alice's second request got a place past her share")
        assert shares.waiting() == 0
    assert len(shares) == 0


async def test_a_deadline_passed_waiting_for_the_share_says_which_limit_held_it() -> None:
    shares = Shares(2)

    async def alice_again() -> None:
        with anyio.fail_after(0.01):  # her only place is held until the block ends: it always passes
            async with shares.held("alice", lambda: "one caller holds at most 1"):
                pytest.fail("alice's second request got a place past her share")

    async with holding(shares, "alice"):
        with pytest.raises(ShareWaitTimedOut, match="one caller holds at most 1"):
            await alice_again()
    assert len(shares) == 0


async def test_a_cancellation_without_a_deadline_stays_a_cancellation() -> None:
    shares = Shares(2)
    async with holding(shares, "alice"):
        with anyio.CancelScope() as scope:
            scope.cancel()
            async with shares.held("alice", lambda: "never said"):
                pytest.fail("alice's second request got a place past her share")
        assert scope.cancelled_caught


async def test_a_larger_pool_widens_the_shares_already_waiting() -> None:
    shares = Shares(2)
    second = anyio.Event()

    async with holding(shares, "alice") as group:
        group.start_soon(alice_takes, shares, second)
        await anyio.wait_all_tasks_blocked()
        shares.resize(3)
        await second.wait()
        assert shares.share == 2


async def test_each_request_that_has_to_wait_for_its_share_is_reported_once() -> None:
    waits: list[str] = []
    shares = Shares(2, on_wait=lambda: waits.append("waits"))

    async with holding(shares, "alice") as group:  # her first place was free: not reported
        group.start_soon(alice_takes, shares, anyio.Event())
        await anyio.wait_all_tasks_blocked()
        assert waits == ["waits"]
    assert waits == ["waits"]
