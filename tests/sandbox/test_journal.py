"""A run's journal of host answers: recorded live, replayed without side effects, refused on divergence."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from gateway import ExecutionResult, Sandbox
from gateway.errors import ResumeRefused, ToolCallError
from gateway.sandbox.journal import HostJournal, PausedCall, arguments_digest

pytestmark = pytest.mark.anyio

# Everything a snippet could tell two runs apart by: randomness, hashing, clocks, sleeps, tool results.
SNIPPET = """
import random, time, uuid
out = {"random": random.random(), "uuid": str(uuid.uuid4()), "hash": hash("salted"), "wall": time.time()}
t0 = time.monotonic()
time.sleep(0.01)
out["counted"] = tools.shop.count(step=1)
try:
    tools.shop.refuse()
except ToolError as e:
    out["refused"] = str(e)
out["monotonic_runs_forward"] = time.monotonic() >= t0
out["last"] = tools.shop.count(step=2)
out
"""


class Shop:
    """A tool caller with a side effect to count: every call that reaches it is recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        if name == "shop.refuse":
            raise ToolCallError("refused by the shop")
        return {"count": len(self.calls)}


async def run(sandbox: Sandbox, shop: Shop, journal: HostJournal, code: str = SNIPPET) -> ExecutionResult:
    with anyio.fail_after(60):
        return await sandbox.execute(code, tool_caller=shop, journal=journal)


async def test_a_replayed_run_repeats_itself_without_calling_anything(sandbox: Sandbox) -> None:
    shop, journal = Shop(), HostJournal()
    first = await run(sandbox, shop, journal)
    assert first.ok, first.error
    assert len(shop.calls) == 3
    replay_shop = Shop()
    replayed = await run(sandbox, replay_shop, HostJournal(journal.seed, journal.answers))
    assert replayed.ok, replayed.error
    assert replay_shop.calls == []  # every answer came from the journal
    assert replayed.value == first.value
    assert [call.tool for call in replayed.tool_calls] == [call.tool for call in first.tool_calls]


async def test_another_seed_gives_other_randomness(sandbox: Sandbox) -> None:
    first, second = HostJournal(), HostJournal()
    one = await run(sandbox, Shop(), first)
    two = await run(sandbox, Shop(), second)
    assert one.value["random"] != two.value["random"]
    assert one.value["uuid"] != two.value["uuid"]


async def test_a_resumed_run_replays_up_to_the_paused_call_and_continues_live(sandbox: Sandbox) -> None:
    shop, journal = Shop(), HostJournal()
    await run(sandbox, shop, journal)
    # Pretend the run paused at its last call: the journal holds every answer before it.
    paused_at = len(journal.answers) - 1
    paused = PausedCall(journal.answers[paused_at].name, journal.answers[paused_at].digest)
    live_shop = Shop()
    resumed = await run(sandbox, live_shop, HostJournal(journal.seed, journal.answers[:paused_at], paused))
    assert resumed.ok, resumed.error
    assert live_shop.calls == [("shop.count", {"step": 2})]  # only the paused call reached the tool


async def test_a_replay_that_diverges_from_the_journal_is_stopped_before_any_call(sandbox: Sandbox) -> None:
    journal = HostJournal()
    await run(sandbox, Shop(), journal)
    shop = Shop()
    changed = SNIPPET.replace("step=1", "step=99")
    result = await run(sandbox, shop, HostJournal(journal.seed, journal.answers), changed)
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "ResumeRefused"
    assert "did not repeat the paused one" in result.error.message
    assert shop.calls == []


async def test_the_first_live_call_must_be_the_paused_one(sandbox: Sandbox) -> None:
    journal = HostJournal()
    await run(sandbox, Shop(), journal)
    shop = Shop()
    elsewhere = PausedCall("shop.count", arguments_digest('{"step": 3}'))
    result = await run(sandbox, shop, HostJournal(journal.seed, journal.answers[:-1], elsewhere))
    assert result.error is not None
    assert result.error.type == "ResumeRefused"
    assert shop.calls == []


def test_a_divergent_name_is_refused_with_both_names() -> None:
    journal = HostJournal(answers=[])
    journal.replay("@clock", "{}")
    journal.record(True, '{"time_ns": 1, "monotonic_ns": 5}', None)
    replaying = HostJournal(journal.seed, journal.answers)
    with pytest.raises(ResumeRefused, match=r"'@clock', now 'shop\.count'"):
        replaying.replay("shop.count", "{}")


def test_monotonic_time_continues_from_the_last_replayed_reading() -> None:
    far_ahead = time.monotonic_ns() + 10**15  # another process, whose clock started long before
    journal = HostJournal()
    journal.replay("@clock", "{}")
    journal.record(True, f'{{"time_ns": 1, "monotonic_ns": {far_ahead}}}', None)
    resumed = HostJournal(journal.seed, journal.answers)
    assert resumed.replay("@clock", "{}") is not None
    assert resumed.replay("@clock", "{}") is None  # live from here
    assert far_ahead <= resumed.clock()["monotonic_ns"] < far_ahead + 10**9


def test_a_journal_past_its_cap_stops_recording_and_says_so() -> None:
    journal = HostJournal(max_bytes=1000)
    for _ in range(3):
        journal.replay("shop.count", "{}")
        journal.record(True, "x" * 400, None)
    assert journal.overflowed
    assert journal.answers == []
