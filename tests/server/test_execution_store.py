"""Background runs kept in a local SQLite file across restarts (gateway/server/_execution_store.py), as
`BackgroundExecutions` uses it: a process ends, another starts on the same file, and collects."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import types

from gateway.auth import STATIC_ISSUER, Owner
from gateway.config import load_config
from gateway.config.server import BackgroundConfig
from gateway.errors import BackgroundRefused
from gateway.server._background import BackgroundExecution, BackgroundExecutions
from gateway.server._execution_store import (
    UNUSED_FILE_SECONDS,
    ExecutionRecord,
    FileExecutions,
    executions_file,
)
from gateway.server._shared_executions import open_execution_store

pytestmark = pytest.mark.anyio

WAIT = 10.0
ALICE = Owner(STATIC_ISSUER, "alice")
BOB = Owner(STATIC_ISSUER, "bob")


def _result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"value": text})


def _returning(text: str) -> Callable[[BackgroundExecution], Awaitable[types.CallToolResult]]:
    async def work(execution: BackgroundExecution) -> types.CallToolResult:
        return _result(text)

    return work


async def _finished(store: BackgroundExecutions, owner: Owner, text: str) -> str:
    execution = await store.start(owner, _returning(text))
    with anyio.fail_after(WAIT):
        await execution.done.wait()
    return execution.id


def _record(execution_id: str, ended_at: float | None = None) -> ExecutionRecord:
    return ExecutionRecord(
        id=execution_id,
        issuer=ALICE.issuer,
        principal=ALICE.principal,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        status="completed",
        result=_result(execution_id),
        ended_at=ended_at if ended_at is not None else time.time(),
    )


def _executions(**config: float) -> BackgroundExecutions:
    return BackgroundExecutions(BackgroundConfig.model_validate(config))


async def test_a_finished_result_is_collected_by_its_owner_after_a_restart_and_by_no_one_else(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite3"
    before = _executions()
    runs = FileExecutions(path)
    async with before.running(runs):
        execution_id = await _finished(before, ALICE, "kept")
    runs.close()

    after = _executions()
    runs = FileExecutions(path)
    async with after.running(runs):
        with anyio.fail_after(WAIT):
            collected = await after.wait_for(ALICE, execution_id, WAIT)
        assert (collected.status, collected.result) == ("completed", _result("kept"))
        with pytest.raises(BackgroundRefused, match="another caller started it"):
            await after.find(BOB, execution_id)
        assert [e.id for e in after.owned_by(ALICE)] == [execution_id]
    runs.close()


async def test_results_past_keep_seconds_are_not_brought_back_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = FileExecutions(path)
    old = _record("old", ended_at=1_000_000.0)  # long before keep_seconds
    await store.ended(old)
    executions = _executions(keep_seconds=60)
    async with executions.running(store):
        with pytest.raises(BackgroundRefused, match="its result expired"):
            await executions.find(ALICE, "old")
        with anyio.fail_after(WAIT):
            while await store.read("old") is not None:  # noqa: ASYNC110 (forgotten by the store's own task)
                await anyio.sleep(0.01)
    store.close()


async def test_a_result_dropped_for_the_callers_share_is_forgotten_in_the_file_too(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    runs = FileExecutions(path)
    executions = _executions(max_kept=10, max_kept_per_caller=1)
    async with executions.running(runs):
        first = await _finished(executions, ALICE, "first")
        second = await _finished(executions, ALICE, "second")
        with anyio.fail_after(WAIT):
            while await runs.read(first) is not None:  # noqa: ASYNC110 (forgotten by the store's own task)
                await anyio.sleep(0.01)
    assert [record.id for record in await runs.kept()] == [second]
    runs.close()


async def test_the_file_is_made_when_a_run_ends_for_the_gateways_user_alone_and_never_through_a_symlink(
    tmp_path: Path,
) -> None:
    path = executions_file(tmp_path / "team.json", tmp_path / "cache")
    runs = FileExecutions(path)
    assert not path.exists()  # a gateway that runs nothing in the background leaves no file
    await runs.ended(_record("kept"))
    runs.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    target = tmp_path / "elsewhere.sqlite3"
    planted = executions_file(tmp_path / "other.json", tmp_path / "cache")
    os.symlink(target, planted)
    with pytest.raises(OSError, match="symbolic links"):
        FileExecutions(planted)
    assert not target.exists()


def test_two_configs_sharing_a_cache_directory_keep_their_runs_in_two_files(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert executions_file(tmp_path / "a.json", cache) != executions_file(tmp_path / "b.json", cache)
    assert executions_file(tmp_path / "a.json", cache) == executions_file(tmp_path / "a.json", cache)


async def test_a_symlink_planted_where_the_results_file_goes_is_never_followed_and_runs_still_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEMODE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "team.json"
    path.write_text('{"mcpServers": {}}', encoding="utf-8")
    config = load_config(path)
    planted = executions_file(config.config_file)
    planted.parent.mkdir(parents=True)
    target = tmp_path / "attacker-chosen.sqlite3"
    os.symlink(target, planted)
    async with open_execution_store(config, None, lasting=True) as store:
        assert store is None  # results stay in memory: the gateway serves as without the file
        executions = BackgroundExecutions(config.background)
        async with executions.running(store):
            execution_id = await _finished(executions, ALICE, "served")
            collected = await executions.find(ALICE, execution_id)
    assert collected.result == _result("served")
    assert not target.exists()
    assert planted.is_symlink()


async def _result_in(path: Path, execution_id: str) -> types.CallToolResult | None:
    """The result a results file holds for `execution_id`, read as a restarted gateway reads it."""
    store = FileExecutions(path)
    record = await store.read(execution_id)
    store.close()
    return record.result if record is not None else None


async def test_a_new_results_file_removes_those_no_gateway_wrote_for_thirty_days_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    unused = executions_file(tmp_path / "gone.json", cache)
    recent = executions_file(tmp_path / "team.json", cache)
    for path in (unused, recent):
        store = FileExecutions(path)
        await store.ended(_record("kept"))
        store.close()
    wal = unused.with_name(unused.name + "-wal")
    wal.write_bytes(b"")
    other = unused.with_name("notes.txt")  # not a results file: never the gateway's to remove
    other.write_text("mine", encoding="utf-8")
    month_ago = time.time() - UNUSED_FILE_SECONDS - 60
    for path in (unused, wal, other):
        os.utime(path, (month_ago, month_ago))
    day_ago = time.time() - 86_400
    os.utime(recent, (day_ago, day_ago))

    new = FileExecutions(executions_file(tmp_path / "new.json", cache))
    await new.ended(_record("first"))
    new.close()
    assert not unused.exists()
    assert not wal.exists()
    assert other.exists()
    assert await _result_in(recent, "kept") == _result("kept")


async def test_a_results_file_removed_while_its_gateway_runs_is_made_again_for_the_next_result(
    tmp_path: Path,
) -> None:
    path = executions_file(tmp_path / "team.json", tmp_path / "cache")
    runs = FileExecutions(path)
    await runs.ended(_record("before"))
    for part in path.parent.glob(path.name + "*"):
        part.unlink()  # another gateway found it unused
    await runs.ended(_record("after"))
    runs.close()
    assert await _result_in(path, "after") == _result("after")


async def test_removing_unused_results_files_never_follows_a_planted_link_nor_empties_a_directory(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    own = executions_file(tmp_path / "team.json", cache)
    own.parent.mkdir(parents=True)
    target = tmp_path / "precious.txt"
    target.write_text("not the gateway's", encoding="utf-8")
    link = own.with_name("runs-planted.sqlite3")
    link.symlink_to(target)
    directory = own.with_name("runs-directory.sqlite3")
    directory.mkdir()
    (directory / "inside").write_text("kept", encoding="utf-8")
    month_ago = time.time() - UNUSED_FILE_SECONDS - 60
    os.utime(target, (month_ago, month_ago))
    os.utime(link, (month_ago, month_ago), follow_symlinks=False)
    os.utime(directory, (month_ago, month_ago))

    runs = FileExecutions(own)
    await runs.ended(_record("served"))
    kept = await runs.read("served")
    runs.close()
    assert target.read_text(encoding="utf-8") == "not the gateway's"
    assert not link.is_symlink()  # the link itself went, as any unused entry of that name does
    assert (directory / "inside").read_text(encoding="utf-8") == "kept"
    assert kept is not None
    assert kept.result == _result("served")
