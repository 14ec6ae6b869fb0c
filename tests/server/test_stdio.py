"""Serving over stdio: a stdin reader that never holds up a shutdown, a stdout writer that needs no
worker thread, and the signals that start a shutdown."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from gateway.server._stdio import (
    PipeStdinLines,
    StdinLines,
    StdoutLines,
    cancel_on_signals,
    pipe_stdin,
    pipe_stdout,
)

pytestmark = pytest.mark.anyio

WAIT = 10


@pytest.mark.parametrize("reader", [StdinLines, PipeStdinLines], ids=["thread", "event-loop"])
async def test_stdin_lines_are_read_in_order_then_eof_reads_as_an_empty_line(
    reader: type[StdinLines | PipeStdinLines],
) -> None:
    read_fd, write_fd = os.pipe()
    data = b"first\nsecond \xff\n" + b"x" * 200_000 + b"\nno newline"

    def write_all() -> None:  # more than a pipe holds: written while the lines are read
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)

    read: list[str] = []
    try:
        with anyio.fail_after(WAIT):
            async with reader(read_fd) as lines, anyio.create_task_group() as task_group:
                task_group.start_soon(anyio.to_thread.run_sync, write_all)
                read += [line async for line in lines]
                assert await lines.readline() == ""
        assert os.get_blocking(read_fd)  # the event-loop reader's O_NONBLOCK was on its own description
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


async def test_a_pending_read_on_the_event_loop_is_cancelled_at_once() -> None:
    read_fd, write_fd = os.pipe()  # nothing is written: the reader waits for the pipe
    try:
        with anyio.fail_after(WAIT):
            async with PipeStdinLines(read_fd) as lines:
                with anyio.move_on_after(0.1) as waited:
                    await lines.readline()
                assert waited.cancelled_caught
                os.write(write_fd, b"after\n")  # the cancelled wait lost nothing
                assert await lines.readline() == "after\n"
    finally:
        os.close(read_fd)
        os.close(write_fd)


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


def read_all(fd: int) -> bytes:
    """Everything a pipe's read end holds until its write ends are all closed."""
    chunks: list[bytes] = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


async def test_stdout_lines_reach_the_pipe_whole_and_in_order_even_past_its_buffer() -> None:
    read_fd, write_fd = os.pipe()
    big = "y" * 1_000_000  # far more than a pipe holds: written as the reader drains it
    messages = ["first\n", big + "\n", "caf\u00e9\n"]
    received: list[bytes] = []
    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:

                async def drain() -> None:
                    received.append(await anyio.to_thread.run_sync(read_all, read_fd))

                task_group.start_soon(drain)
                async with StdoutLines(write_fd) as stdout:
                    for message in messages:
                        assert await stdout.write(message) == len(message)
                    await stdout.flush()
                os.close(write_fd)  # the drain reads EOF
    finally:
        os.close(read_fd)
    assert received == ["".join(messages).encode()]


async def test_while_stdout_lines_serve_the_descriptor_points_away_from_the_wire() -> None:
    read_fd, write_fd = os.pipe()
    try:
        with anyio.fail_after(WAIT):
            async with StdoutLines(write_fd) as stdout:
                os.write(write_fd, b"stray output\n")  # what a print() would do: not on the wire
                await stdout.write("message\n")
            os.write(write_fd, b"restored\n")  # the descriptor is the pipe again
            assert os.get_blocking(write_fd)  # non-blocking was set on a description of its own
        os.close(write_fd)
        assert read_all(read_fd) == b"message\nrestored\n"
    finally:
        os.close(read_fd)


async def test_a_write_waiting_for_a_full_pipe_is_cancelled_at_once() -> None:
    read_fd, write_fd = os.pipe()  # nobody reads: the pipe fills and the write waits for room
    try:
        with anyio.fail_after(WAIT):
            async with StdoutLines(write_fd) as stdout:
                with anyio.move_on_after(0.2) as waited:
                    await stdout.write("z" * 1_000_000)
                assert waited.cancelled_caught
    finally:
        os.close(write_fd)
        os.close(read_fd)


def test_only_pipes_are_read_and_written_from_the_event_loop(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    left, right = socket.socketpair()
    try:
        with (tmp_path / "out.log").open("w") as file:
            assert isinstance(pipe_stdout(write_fd), StdoutLines)
            assert isinstance(pipe_stdin(read_fd), PipeStdinLines)
            for other in (file.fileno(), left.fileno()):  # the SDK's writer, and the thread reader
                assert pipe_stdout(other) is None
                assert pipe_stdin(other) is None
    finally:
        for fd in (read_fd, write_fd):
            os.close(fd)
        left.close()
        right.close()
