"""A paused execution's state: what it binds, single use, and the caps on what a client carries back."""

from __future__ import annotations

import os

import anyio
import pytest

from gateway.calls._resume import PausedExecution, SpentStates, code_sha256, paused_execution
from gateway.errors import ApprovalLimitExceeded, ResumeRefused
from gateway.policy.config import ApprovalsConfig
from gateway.sandbox.journal import HostJournal
from gateway.sandbox.result import ToolCallRecord

CONFIG = ApprovalsConfig()
CODE = "tools.repo.delete(name='x')"


def journal_paused_at(tool: str = "repo.delete", payload: str = '{"ok": true}') -> HostJournal:
    journal = HostJournal()
    journal.replay("repo.list", "{}")
    journal.record(True, payload, ToolCallRecord(tool="repo.list", ms=1.0, ok=True))
    journal.replay(tool, '{"name": "x"}')  # the live call the execution paused in
    return journal


def pause(journal: HostJournal, round: int = 1, config: ApprovalsConfig = CONFIG) -> PausedExecution:
    return paused_execution(
        "exec-1",
        1700000000.0,
        round,
        CODE,
        "component-a",
        journal,
        "repo.delete",
        "shown",
        {"repo.list": 1},
        config,
    )


def test_a_paused_run_comes_back_from_its_state_as_it_was() -> None:
    paused = pause(journal_paused_at())
    loaded = PausedExecution.load(paused.dump(CONFIG))
    assert loaded == paused
    assert loaded.paused.name == "repo.delete"
    assert loaded.quota == {"repo.list": 1}
    loaded.check(CODE, "component-a")


def test_answers_of_calls_in_flight_at_the_pause_travel_with_the_state() -> None:
    journal = journal_paused_at()
    journal.settle(3, '{"ok":true,"value":42}')
    loaded = PausedExecution.load(pause(journal).dump(CONFIG))
    assert loaded.settled == {3: '{"ok":true,"value":42}'}
    resumed = loaded.journal(max_bytes=1 << 20)
    assert resumed.take_settled([3]) == {}  # replaying: waits are answered from the journal


def test_a_state_resumes_only_the_snippet_it_paused() -> None:
    paused = pause(journal_paused_at())
    assert paused.code_sha256 == code_sha256(CODE)
    with pytest.raises(ResumeRefused, match="belongs to another snippet"):
        paused.check(CODE + " ", "component-a")


def test_a_state_from_another_build_of_the_sandbox_is_refused() -> None:
    with pytest.raises(ResumeRefused, match="another build of the sandbox"):
        pause(journal_paused_at()).check(CODE, "component-b")


@pytest.mark.anyio
async def test_a_state_resumes_once() -> None:
    spent = SpentStates(ttl_seconds=600)
    await spent.spend("nonce-1")
    with pytest.raises(ResumeRefused, match="already used"):
        await spent.spend("nonce-1")
    await spent.spend("nonce-2")


@pytest.mark.anyio
async def test_a_spent_state_is_forgotten_once_it_would_have_expired_anyway() -> None:
    spent = SpentStates(ttl_seconds=0.01)
    await spent.spend("nonce-1")
    await anyio.sleep(0.05)
    await spent.spend("nonce-2")  # prunes the first
    await spent.spend("nonce-1")  # its state has expired: the boundary refuses it before it gets here


def test_every_pause_gets_its_own_nonce() -> None:
    assert pause(journal_paused_at()).nonce != pause(journal_paused_at()).nonce


def test_a_state_over_the_cap_is_refused_with_the_key_to_raise() -> None:
    config = ApprovalsConfig(max_state_bytes=4096)
    incompressible = os.urandom(8192).hex()
    with pytest.raises(ApprovalLimitExceeded, match=r"approvals\.max_state_bytes of 4,096") as refused:
        pause(journal_paused_at(payload=f'"{incompressible}"'), config=config).dump(config)
    assert "repo.delete needs approval" in str(refused.value)


def test_a_journal_that_overflowed_while_running_cannot_pause() -> None:
    journal = HostJournal(max_bytes=100)
    journal.replay("repo.list", "{}")
    journal.record(True, "x" * 1000, None)
    journal.replay("repo.delete", "{}")
    with pytest.raises(ApprovalLimitExceeded, match=r"approvals\.max_state_bytes"):
        pause(journal)


def test_more_pauses_than_max_rounds_end_the_run_with_the_key_to_change() -> None:
    config = ApprovalsConfig(max_rounds=2)
    pause(journal_paused_at(), round=2, config=config)
    with pytest.raises(ApprovalLimitExceeded, match=r"already paused for 2 approvals.*approvals\.max_rounds"):
        pause(journal_paused_at(), round=3, config=config)


@pytest.mark.parametrize("state", ["", "not base64!", "aGVsbG8=", "eJyrVipTslIqSy0qzszPUzIy0DOwUKoFADtwBWI="])
def test_a_state_this_gateway_cannot_read_is_refused_not_resumed(state: str) -> None:
    with pytest.raises(ResumeRefused, match="cannot be read"):
        PausedExecution.load(state)
