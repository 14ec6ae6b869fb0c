"""Serving over stdio: a stdin reader that never holds up a shutdown, and the signals that start one."""

from __future__ import annotations

import os
import signal

import anyio
import anyio.to_thread
import pytest

from gateway.server._stdio import StdinLines, cancel_on_signals

pytestmark = pytest.mark.anyio

WAIT = 10


async def test_stdin_lines_are_read_in_order_then_eof_reads_as_an_empty_line() -> None:
    read_fd, write_fd = os.pipe()
    data = b"first\nsecond \xff\n" + b"x" * 200_000 + b"\nno newline"

    def write_all() -> None:  # more than a pipe holds: written while the lines are read
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)

    read: list[str] = []
    try:
        with anyio.fail_after(WAIT):
            async with StdinLines(read_fd) as lines, anyio.create_task_group() as task_group:
                task_group.start_soon(anyio.to_thread.run_sync, write_all)
                read += [line async for line in lines]
                assert await lines.readline() == ""
    finally:
        os.close(read_fd)
    assert read == ["first\n", "second \ufffd\n", "x" * 200_000 + "\n", "no newline"]


async def test_a_pending_stdin_read_does_not_delay_cancellation() -> None:
    read_fd, write_fd = os.pipe()  # nothing is written: the reader thread blocks in its read
    with anyio.fail_after(WAIT):
        async with StdinLines(read_fd) as lines, anyio.create_task_group() as task_group:
            task_group.start_soon(lines.readline)
            await anyio.wait_all_tasks_blocked()
            task_group.cancel_scope.cancel()  # returns at once, the read still pending
        os.close(write_fd)  # EOF ends the daemon thread
        assert lines.thread is not None
        await anyio.to_thread.run_sync(lines.thread.join)
    os.close(read_fd)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_sigterm_or_sigint_cancels_the_serving_scope(signum: signal.Signals) -> None:
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            serving = anyio.CancelScope()
            await task_group.start(cancel_on_signals, serving)
            with serving:
                os.kill(os.getpid(), signum)  # handled by the receiver, not by pytest
                await anyio.sleep_forever()
            assert serving.cancelled_caught
