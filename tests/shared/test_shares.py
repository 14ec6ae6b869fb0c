"""Each caller's share of a pool of places: all but one, its further requests in a queue of its own,
its entry kept only while it holds or waits for a place."""

from __future__ import annotations

from collections.abc import Hashable

import anyio
import pytest
from anyio.abc import TaskStatus

from gateway.shared import Shares, ShareWaitTimedOut, share_of

pytestmark = pytest.mark.anyio

WAIT = 10  # bounds a hang, never a race


async def _holding(
    shares: Shares, holder: Hashable | None, release: anyio.Event, *, task_status: TaskStatus[None]
) -> None:
    async with shares.held(holder):
        task_status.started()
        await release.wait()


def test_one_caller_may_hold_all_places_but_one_or_the_only_one() -> None:
    assert [share_of(places) for places in (1, 2, 4, 16)] == [1, 1, 3, 15]


async def test_a_caller_past_its_share_waits_while_another_caller_takes_a_place() -> None:
    shares = Shares(4)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for _ in range(3):
                await group.start(_holding, shares, "alice", release)
            fourth = anyio.Event()

            async def alice_again() -> None:
                async with shares.held("alice"):
                    fourth.set()

            group.start_soon(alice_again)
            await anyio.wait_all_tasks_blocked()
            assert not fourth.is_set()  # alice's fourth waits in alice's own queue
            assert shares.waiting() == 1
            async with shares.held("bob"):
                assert shares.held_by("bob") == 1
            release.set()
            await fourth.wait()
    assert len(shares) == 0


async def test_a_request_without_a_caller_takes_no_share() -> None:
    shares = Shares(4)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for _ in range(4):
                await group.start(_holding, shares, None, release)
            assert len(shares) == 0
            release.set()


async def test_a_lone_caller_of_a_single_place_gets_it() -> None:
    shares = Shares(1)
    with anyio.fail_after(WAIT):
        async with shares.held("alice"):
            assert shares.held_by("alice") == 1


async def test_entries_are_dropped_once_their_caller_holds_and_waits_for_nothing() -> None:
    shares = Shares(2)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for caller in range(50):
                await group.start(_holding, shares, f"caller-{caller}", release)
            assert len(shares) == 50
            release.set()
    assert len(shares) == 0


async def test_a_wait_given_up_leaves_no_entry_behind() -> None:
    shares = Shares(2)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_holding, shares, "alice", release)
            with anyio.move_on_after(0):
                async with shares.held("alice"):
                    pytest.fail("alice's second request got a place past her share")
            assert shares.waiting() == 0
            release.set()
    assert len(shares) == 0


async def test_a_deadline_passed_waiting_for_the_share_says_which_limit_held_it() -> None:
    shares = Shares(2)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_holding, shares, "alice", release)

            async def alice_again() -> None:
                with anyio.fail_after(0.01):
                    async with shares.held("alice", lambda: "one caller holds at most 1"):
                        pytest.fail("alice's second request got a place past her share")

            with pytest.raises(ShareWaitTimedOut, match="one caller holds at most 1"):
                await alice_again()
            release.set()
    assert len(shares) == 0


async def test_a_cancellation_without_a_deadline_stays_a_cancellation() -> None:
    shares = Shares(2)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_holding, shares, "alice", release)
            with anyio.CancelScope() as scope:
                scope.cancel()
                async with shares.held("alice", lambda: "never said"):
                    pytest.fail("alice's second request got a place past her share")
            assert scope.cancelled_caught
            release.set()


async def test_a_larger_pool_widens_the_shares_already_waiting() -> None:
    shares = Shares(2)
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_holding, shares, "alice", release)
            second = anyio.Event()

            async def alice_again() -> None:
                async with shares.held("alice"):
                    second.set()

            group.start_soon(alice_again)
            await anyio.wait_all_tasks_blocked()
            shares.resize(3)
            await second.wait()
            assert shares.share == 2
            release.set()


async def test_each_request_that_has_to_wait_for_its_share_is_reported_once() -> None:
    waits: list[str] = []
    shares = Shares(2, on_wait=lambda: waits.append("waits"))
    release = anyio.Event()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_holding, shares, "alice", release)  # a free place: not reported
            group.start_soon(_holding_quietly, shares, "alice", release)
            await anyio.wait_all_tasks_blocked()
            assert waits == ["waits"]
            release.set()
    assert waits == ["waits"]


async def _holding_quietly(shares: Shares, holder: Hashable, release: anyio.Event) -> None:
    async with shares.held(holder):
        await release.wait()
