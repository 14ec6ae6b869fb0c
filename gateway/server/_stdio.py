"""stdin and stdout for serving over stdio, and the signals (SIGTERM, SIGINT) that start a shutdown.

The SDK's `stdio_server` reads stdin in an anyio worker thread, which a cancellation must wait for:
a SIGTERM while the client is silent would wait for the client's next line. When stdin is a pipe (as
MCP clients start servers), `PipeStdinLines` reads it from the event loop instead, through a
non-blocking descriptor of its own; otherwise `StdinLines` reads in a daemon thread, so cancelling
the server returns at once and the process may exit with a read still pending.

The SDK also hands every write to stdout, and every flush, to a worker thread: two thread hops per
message, a visible share of each request's round trip (docs/benchmarks.md). When stdout is a pipe,
`StdoutLines` writes from the event loop to a non-blocking descriptor of its own, and waits on the
loop only while the client is slow to read.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, nullcontext
from types import TracebackType
from typing import Self

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskStatus

__all__ = [
    "PipeStdinLines",
    "StdinLines",
    "StdoutLines",
    "cancel_on_signals",
    "pipe_stdin",
    "pipe_stdout",
    "stdio_files",
]

log = logging.getLogger("gateway.server")

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_READ_BYTES = 64 * 1024


class StdinLines(anyio.AsyncFile[str]):
    """stdin's lines (UTF-8, bad bytes replaced) for `stdio_server(stdin=...)`, read by a daemon thread."""

    def __init__(self, fd: int | None = None) -> None:
        super().__init__(sys.stdin)  # only for the pass-through attributes; reads never touch it
        # Raw reads of the descriptor: a buffered file's lock, held by a read that never returns,
        # would block whoever closes or finalizes that file.
        self._fd = sys.stdin.fileno() if fd is None else fd
        # One line in flight: the thread waits for the server to take it, so nothing piles up.
        self._send, self._receive = anyio.create_memory_object_stream[str](1)
        self.thread: threading.Thread | None = None

    async def __aenter__(self) -> Self:
        token = anyio.lowlevel.current_token()
        self.thread = threading.Thread(target=self._read, args=(token,), name="codemode-stdin", daemon=True)
        self.thread.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._receive.close()  # a line the thread still holds is dropped with it

    def _read(self, token: anyio.lowlevel.EventLoopToken) -> None:
        def deliver(line: bytes) -> None:
            anyio.from_thread.run(self._send.send, line.decode("utf-8", "replace"), token=token)

        pending = bytearray()
        try:
            while chunk := os.read(self._fd, _READ_BYTES):
                scanned = len(pending)  # the part before holds no newline: never scan it again
                pending += chunk
                start = 0
                while (end := pending.find(b"\n", max(start, scanned))) >= 0:
                    deliver(bytes(pending[start : end + 1]))
                    start = end + 1
                del pending[:start]
            if pending:
                deliver(bytes(pending))
            anyio.from_thread.run_sync(self._send.close, token=token)  # EOF
        except Exception:  # the server has stopped (stream closed, loop gone): nobody is listening
            log.debug("stdin reader stopped", exc_info=True)

    async def readline(self) -> str:
        """The next line, or "" at EOF."""
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return ""


class PipeStdinLines(anyio.AsyncFile[str]):
    """stdin's lines (UTF-8, bad bytes replaced) for `stdio_server(stdin=...)` when it is a pipe: read
    from the event loop through a non-blocking descriptor of the pipe's own, so no thread hands each
    line over, and a cancellation ends a wait at once. `pipe_stdin` makes one where it applies."""

    def __init__(self, fd: int) -> None:
        super().__init__(sys.stdin)  # only for the pass-through attributes; reads never touch it
        self._target = fd
        self._fd = -1
        self._pending = bytearray()
        self._scanned = 0  # the start of `_pending` holds no newline: never scan it again
        self._eof = False

    async def __aenter__(self) -> Self:
        self._fd = _own_descriptor(self._target, os.O_RDONLY)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.close(self._fd)

    async def readline(self) -> str:
        """The next line, or "" at EOF."""
        while (end := self._pending.find(b"\n", self._scanned)) < 0 and not self._eof:
            self._scanned = len(self._pending)
            try:
                chunk = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            self._pending += chunk
            self._eof = not chunk
        cut = end + 1 if end >= 0 else len(self._pending)
        line = bytes(self._pending[:cut])
        del self._pending[:cut]
        self._scanned = 0
        return line.decode("utf-8", "replace")


class StdoutLines(anyio.AsyncFile[str]):
    """stdout for `stdio_server(stdout=...)` when it is a pipe: messages go to a non-blocking
    descriptor of the pipe's own, written from the event loop; meanwhile fd 1 points at stderr, so
    nothing else reaches the wire. `pipe_stdout` makes one where it applies."""

    def __init__(self, fd: int) -> None:
        super().__init__(sys.stdout)  # only for the pass-through attributes; writes never touch it
        self._target = fd
        self._fd = -1
        self._restore = -1

    async def __aenter__(self) -> Self:
        self._fd = _own_descriptor(self._target, os.O_WRONLY)
        self._restore = os.dup(self._target)
        os.dup2(sys.stderr.fileno(), self._target)  # stray output (a print, a library) goes to stderr
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.dup2(self._restore, self._target)
        os.close(self._restore)
        os.close(self._fd)

    async def write(self, b: str) -> int:
        """Write the text `b` whole; wait on the event loop while the pipe is full."""
        data = memoryview(b.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
        return len(b)

    async def flush(self) -> None:
        """Nothing is buffered here: each write reached the pipe."""


def _is_pipe(fd: int) -> bool:
    """Whether `fd` is a pipe this process can open anew (through /proc)."""
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode) and os.path.exists(f"/proc/self/fd/{fd}")
    except OSError:
        return False


def _own_descriptor(fd: int, access: int) -> int:
    """A non-blocking descriptor of the pipe `fd` is, with an open file description of its own:
    O_NONBLOCK belongs to the description, and a duplicate would share the client's, which it may
    share further (a shell's, a parent's)."""
    return os.open(f"/proc/self/fd/{fd}", access | os.O_NONBLOCK | os.O_CLOEXEC)


def pipe_stdin(fd: int | None = None) -> PipeStdinLines | None:
    """PipeStdinLines for stdin (or `fd`) if it is a pipe, as MCP clients start servers; else None,
    for `StdinLines` (a terminal, a file, a socket)."""
    target: int = sys.stdin.fileno() if fd is None else fd
    return PipeStdinLines(target) if _is_pipe(target) else None


def pipe_stdout(fd: int | None = None) -> StdoutLines | None:
    """StdoutLines for stdout (or `fd`) if it is a pipe, as MCP clients start servers; else None,
    for the SDK's own writer (a terminal, a file, a socket)."""
    target: int = sys.stdout.fileno() if fd is None else fd
    return StdoutLines(target) if _is_pipe(target) else None


@asynccontextmanager
async def stdio_files() -> AsyncGenerator[tuple[anyio.AsyncFile[str], anyio.AsyncFile[str] | None]]:
    """stdin and stdout for `stdio_server(stdin=..., stdout=...)`: read and written from the event
    loop where they are pipes; a stdout of None leaves the writing to the SDK."""
    stdout = pipe_stdout()
    async with pipe_stdin() or StdinLines() as stdin, stdout or nullcontext():
        yield stdin, stdout


async def cancel_on_signals(
    scope: anyio.CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Cancel `scope` at the first SIGTERM or SIGINT; a second one then acts as it usually does."""
    if threading.current_thread() is not threading.main_thread():
        task_status.started()  # signal handlers can only be installed by the main thread
        return
    with anyio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            log.info("shutting down", extra={"signal": signal.Signals(signum).name})
            scope.cancel()
            return
