"""A stdio child's stderr forwarded to the log with bounded memory, and its process group ended."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import anyio.to_thread
import pytest

from gateway.children._process import StderrPump, end_process_group

pytestmark = pytest.mark.anyio

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


async def pumped(lines: str | bytes) -> tuple[StderrPump, str]:
    """A pump fed `lines` and closed, and the tail it quotes once drained."""
    pump = StderrPump("kid")
    with anyio.fail_after(10):
        if isinstance(lines, bytes):
            pump.writer.buffer.write(lines)
        else:
            pump.writer.write(lines)
        pump.close_writer()
        return pump, await pump.drained_tail()


def logged_lines(records: list[logging.LogRecord]) -> list[str]:
    return [r.__dict__["line"] for r in records if r.getMessage() == "child stderr"]


async def test_each_line_reaches_the_childrens_logger_with_the_child_name(
    child_log: list[logging.LogRecord],
) -> None:
    _, tail = await pumped("starting up\n\n   \nready on stdio  \n")
    assert logged_lines(child_log) == ["starting up", "ready on stdio"]
    assert {r.__dict__["child"] for r in child_log} == {"kid"}
    assert {r.name for r in child_log} == {"gateway.children"}
    assert tail == "starting up | ready on stdio"


async def test_a_long_line_is_cut_and_the_rest_of_it_is_not_taken_for_new_lines(
    child_log: list[logging.LogRecord],
) -> None:
    pump, _ = await pumped(b"x" * 200_000 + b"\nnext\n")
    assert logged_lines(child_log) == ["x" * 2000, "next"]
    assert list(pump.tail) == ["x" * 2000, "next"]


async def test_undecodable_bytes_are_replaced_not_fatal() -> None:
    _, tail = await pumped(b"bad \xff\xfe bytes\n")
    assert tail == "bad \ufffd\ufffd bytes"


async def test_the_tail_keeps_the_last_five_lines() -> None:
    _, tail = await pumped("".join(f"line {n}\n" for n in range(8)))
    assert tail == "line 3 | line 4 | line 5 | line 6 | line 7"


async def test_a_flood_of_lines_is_counted_not_logged(child_log: list[logging.LogRecord]) -> None:
    await pumped("".join(f"spam {n}\n" for n in range(250)))
    logged = logged_lines(child_log)
    counted = [r for r in child_log if r.getMessage() == "child stderr lines not logged"]
    assert logged[:100] == [f"spam {n}" for n in range(100)]
    assert counted
    assert all(r.__dict__["limit_per_second"] == 100 for r in counted)
    assert len(logged) + sum(r.__dict__["lines"] for r in counted) == 250


@contextmanager
def child(pump: StderrPump, script: str) -> Iterator[subprocess.Popen[str]]:
    """A shell in a new session (as the SDK starts a child), its stderr the pump's pipe, its stdout ours."""
    process = subprocess.Popen(
        ["sh", "-c", script], stdout=subprocess.PIPE, stderr=pump.writer, start_new_session=True, text=True
    )
    pump.close_writer()
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


async def ready(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return (await anyio.to_thread.run_sync(process.stdout.readline, abandon_on_cancel=True)).strip()


def is_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


@linux_only
async def test_ending_a_process_group_stops_the_child_and_its_grandchildren() -> None:
    pump = StderrPump("kid")
    with child(pump, "sleep 60 & echo $!; wait") as process, anyio.fail_after(10):
        grandchild = int(await ready(process))
        await end_process_group(process.pid)
        assert process.poll() == -signal.SIGTERM  # a zombie until now: the group counts it as gone
        assert is_gone(grandchild)


@linux_only
async def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # This group waits out the grace period whatever its length: a short one reaches SIGKILL sooner.
    monkeypatch.setattr("gateway.children._process._GROUP_GRACE_SECONDS", 0.2)
    pump = StderrPump("kid")
    with child(pump, "trap '' TERM; sleep 60 & echo $!; wait") as process, anyio.fail_after(10):
        grandchild = int(await ready(process))
        await end_process_group(process.pid)
        assert process.poll() == -signal.SIGKILL
        assert is_gone(grandchild)


@linux_only
async def test_ending_a_group_that_is_already_gone_returns_at_once_and_signals_nothing(
    child_log: list[logging.LogRecord],
) -> None:
    pump = StderrPump("kid")
    with child(pump, "exit 3") as process, anyio.fail_after(10):
        assert await anyio.to_thread.run_sync(process.wait) == 3
    with anyio.fail_after(0.5):
        await end_process_group(process.pid)
    assert [r for r in child_log if r.getMessage() == "stopping leftover processes of a child"] == []
