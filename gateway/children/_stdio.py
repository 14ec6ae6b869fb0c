"""A stdio child spawned and read by the gateway itself: one process per child, each message capped as read.

The SDK's `stdio_client` joins a child's pending stdout line again with every 64 KiB it reads, so
its cost grows with the square of a line's length and its memory with the line. `open_stdio_child`
spawns the child in a new session (its pid is its process group's id), splits its stdout with
`LineCap` (bounded memory, linear time), parses each line with the SDK's JSON-RPC message adapter
and hands the messages to a `ClientSession` through a memory stream, as the SDK's transport does.
The session's messages go the other way without a task between: `StdinWriter` writes each one to
the child's stdin from the task that sends it (a hand-over to a writer task costs loop turns on
every call).
It stops the child in MCP's order (close stdin, wait, SIGTERM, SIGKILL), shielded, every wait bounded.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import AsyncResource, ByteSendStream, ObjectSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage

from gateway.children._message_cap import LineCap
from gateway.children._process import signal_process_group

__all__ = ["StdinWriter", "StdioChild", "open_stdio_child"]

log = logging.getLogger("gateway.children")

_EXIT_GRACE_SECONDS = 2.0  # for the child to exit on its own once its stdin is closed
_SIGNAL_GRACE_SECONDS = 2.0  # after SIGTERM, and again after SIGKILL
_EXIT_POLL_SECONDS = 0.01
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


@dataclass(frozen=True, slots=True)
class StdioChild:
    """A running stdio child: the streams a `ClientSession` takes, and its pid (its process group's id)."""

    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    write: StdinWriter
    pid: int


class StdinWriter(ObjectSendStream[SessionMessage]):
    """The session's write stream: each message written to the child's stdin, one JSON line, by the
    task that sends it. A line is written whole before any wait (asyncio's `write` buffers it), so
    messages sent side by side never interleave; a send waits only while the child is slow to read."""

    def __init__(
        self, stdin: ByteSendStream, to_session: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        self._stdin = stdin
        self._to_session = to_session
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        """Write one message; ClosedResourceError once closed, BrokenResourceError if the pipe broke."""
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        try:
            await self._stdin.send(text.encode() + b"\n")
        except _PIPE_ERRORS as exc:
            self._closed = True
            # The child may live on without reading: the session must see the end.
            await self._to_session.aclose()
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        """Refuse further messages (what was sent is already in the pipe's buffer)."""
        self._closed = True

    async def aclose(self) -> None:
        self.close()


@asynccontextmanager
async def open_stdio_child(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: str | Path | None,
    errlog: TextIO,
    max_message_bytes: int,
    child: str,
) -> AsyncGenerator[StdioChild]:
    """Spawn `command` with exactly `env`, stderr to `errlog`; read its lines up to `max_message_bytes`.

    Raises OSError or ValueError when the command cannot be started.
    """
    process = await anyio.open_process(
        [command, *args], env=env, cwd=cwd, stderr=errlog, start_new_session=True
    )
    # No await before the task group: a cancellation in between would leave the process running.
    to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    assert process.stdin is not None
    write = StdinWriter(process.stdin, to_session)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read_stdout, process, LineCap(max_message_bytes), to_session, child)
        try:
            yield StdioChild(read, write, process.pid)
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled caller must not leave the child running
                await _stop(process, read, write, child)
            tasks.cancel_scope.cancel()


def _parsed(line: bytes) -> SessionMessage | Exception:
    """One line as a message, or the error the session's reader gets for a line that is not one."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _report_dropped(lines: LineCap, child: str) -> None:
    for text in lines.dropped:
        log.warning("child message dropped", extra={"child": child, "detail": text})
    lines.dropped.clear()


async def _read_stdout(
    process: Process,
    lines: LineCap,
    to_session: MemoryObjectSendStream[SessionMessage | Exception],
    child: str,
) -> None:
    """Hand each line of the child's stdout to the session until either ends, then drain the rest."""
    assert process.stdout is not None
    try:
        async with to_session:
            async for chunk in process.stdout:
                for line in lines.feed(chunk):
                    await _hand_over(to_session, _parsed(line))
                if lines.dropped:
                    _report_dropped(lines, child)
            lines.end()
            _report_dropped(lines, child)
    except _PIPE_ERRORS:
        pass  # the session is gone, or our shutdown closed the pipe: the stream has ended either way
    finally:
        await _drain(process)


async def _hand_over(
    to_session: MemoryObjectSendStream[SessionMessage | Exception], item: SessionMessage | Exception
) -> None:
    """Send `item` to the session: to a reader already waiting at once, without a checkpoint (a loop turn)."""
    try:
        to_session.send_nowait(item)
    except anyio.WouldBlock:
        await to_session.send(item)


async def _drain(process: Process) -> None:
    """Read and discard stdout until it ends or is closed, so a child blocked writing it can exit."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), suppress(anyio.EndOfStream, *_PIPE_ERRORS):
        while True:
            await process.stdout.receive()


async def _stop(
    process: Process,
    read: MemoryObjectReceiveStream[SessionMessage | Exception],
    write: StdinWriter,
    child: str,
) -> None:
    """Stop the traffic, close stdin (after what was sent), wait, then signal the group until it exits."""
    read.close()  # the reader turns to draining: a child blocked writing stdout can read its stdin's end
    write.close()
    try:
        await _close(process.stdin)
        if not await _exited(process, _EXIT_GRACE_SECONDS):
            await _signal_until_exited(process, child)
    finally:
        await _close(process.stdout)  # ends the drain, even if a grandchild still holds the pipe
        _close_transport(process)


async def _close(stream: AsyncResource | None) -> None:
    if stream is not None:
        with suppress(*_PIPE_ERRORS):
            await stream.aclose()


async def _exited(process: Process, seconds: float) -> bool:
    """Whether the child exits within `seconds`; polled, as `wait` also waits for pipes a grandchild holds."""
    with anyio.move_on_after(seconds):
        while True:  # polled: the loop's child watcher sets the return code, nothing to wait on
            if process.returncode is not None:
                return True
            await anyio.sleep(_EXIT_POLL_SECONDS)
    return False


async def _signal_until_exited(process: Process, child: str) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError):
            process.send_signal(signum)  # the child itself, should it have left its group
        signal_process_group(process.pid, signum)
        if await _exited(process, _SIGNAL_GRACE_SECONDS):
            return
    log.warning("child process survived SIGKILL", extra={"child": child, "pid": process.pid})


def _close_transport(process: Process) -> None:
    """Close the event loop's transport of the process, which a grandchild holding a pipe keeps open."""
    # Nothing public exposes it: without this the loop warns about an unclosed transport at exit.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):  # a setuid child cannot be killed again by the loop's close
            close()
