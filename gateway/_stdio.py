"""What serving over stdio needs for a bounded shutdown: a stdin reader that never holds it up, and
the signals (SIGTERM, SIGINT) that start it.

The SDK's `stdio_server` reads stdin in an anyio worker thread, which a cancellation must wait for:
a SIGTERM while the client is silent would wait for the client's next line. `StdinLines` reads in
a daemon thread instead, so cancelling the server returns at once and the process may exit with a
read still pending.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import TracebackType
from typing import BinaryIO, Self

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskStatus

__all__ = ["StdinLines", "cancel_on_signals"]

log = logging.getLogger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StdinLines(anyio.AsyncFile[str]):
    """stdin's lines (UTF-8, bad bytes replaced) for `stdio_server(stdin=...)`, read by a daemon thread."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        super().__init__(sys.stdin)  # only for the pass-through attributes; reads never touch it
        self._stream = stream if stream is not None else sys.stdin.buffer
        # One line in flight: the thread waits for the server to take it, so nothing piles up.
        self._send, self._receive = anyio.create_memory_object_stream[str](1)

    async def __aenter__(self) -> Self:
        token = anyio.lowlevel.current_token()
        thread = threading.Thread(target=self._read, args=(token,), name="codemode-stdin", daemon=True)
        thread.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._receive.close()  # a line the thread still holds is dropped with it

    def _read(self, token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            for raw in iter(self._stream.readline, b""):
                anyio.from_thread.run(self._send.send, raw.decode("utf-8", "replace"), token=token)
        except Exception:  # the server has stopped (stream closed, loop gone): nobody is listening
            log.debug("stdin reader stopped", exc_info=True)
            return
        try:
            anyio.from_thread.run_sync(self._send.close, token=token)  # EOF
        except Exception:
            log.debug("stdin reader could not report EOF", exc_info=True)

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
