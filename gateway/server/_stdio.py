"""What serving over stdio needs for a bounded shutdown: a stdin reader that never holds it up, and
the signals (SIGTERM, SIGINT) that start it.

The SDK's `stdio_server` reads stdin in an anyio worker thread, which a cancellation must wait for:
a SIGTERM while the client is silent would wait for the client's next line. `StdinLines` reads in
a daemon thread instead, so cancelling the server returns at once and the process may exit with a
read still pending.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import TracebackType
from typing import Self

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskStatus

__all__ = ["StdinLines", "cancel_on_signals"]

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
