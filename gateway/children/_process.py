"""The operating-system side of a stdio child: its stderr and its process group.

`StderrPump` forwards what a child writes to stderr into the gateway's log through a pipe that a
daemon thread drains, keeping a short tail to quote when the child fails. A child leads its own
process group (`_stdio` spawns it in a new session), so `signal_process_group` / `end_process_group`
stop whatever it leaves behind (grandchildren included) once its connection ends.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import deque
from contextlib import suppress
from typing import TextIO

import anyio
import anyio.to_thread

__all__ = ["StderrPump", "end_process_group", "signal_process_group"]

log = logging.getLogger("gateway.children")

_STDERR_TAIL_LINES = 5  # quoted in a failure: usually the child's own explanation
_STDERR_LINE_CHARS = 2000
_STDERR_READ_BYTES = 64 * 1024  # one read's cap: a line without newlines never grows memory
_STDERR_LOG_LINES_PER_SECOND = 100  # past this a flooding child's lines are counted, not logged
_STDERR_JOIN_SECONDS = 1.0
_GROUP_GRACE_SECONDS = 1.0  # SIGTERM to SIGKILL for what the SDK left of a process group
_GROUP_POLL_SECONDS = 0.01


class StderrPump:
    """Forwards a child's stderr, line by line, into the gateway's log (never to stdout).

    The SDK hands `errlog` to the subprocess as its stderr, so it must be a real file: a pipe
    whose read end a daemon thread drains, so a chatty child can never block on a full pipe.
    Memory stays bounded whatever the child writes: reads are capped, a long line is cut, the
    tail keeps a few lines and a flood is counted rather than logged.
    """

    def __init__(self, child: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self.tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._child = child
        self._window = 0.0
        self._logged = 0
        self._dropped = 0
        self._thread = threading.Thread(
            target=self._pump, args=(read_fd,), name=f"codemode-stderr-{child}", daemon=True
        )
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            continued = False
            while raw := pipe.readline(_STDERR_READ_BYTES):
                if not continued:  # the rest of an over-long line is read and dropped
                    self._line(raw[: _STDERR_LINE_CHARS * 4].decode("utf-8", "replace"))
                continued = not raw.endswith(b"\n")
        self._report_dropped()

    def _line(self, text: str) -> None:
        line = text.rstrip()[:_STDERR_LINE_CHARS]
        if not line:
            return
        self.tail.append(line)
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._report_dropped()
            self._window, self._logged = now, 0
        self._logged += 1
        if self._logged <= _STDERR_LOG_LINES_PER_SECOND:
            log.info("child stderr", extra={"child": self._child, "line": line})
        else:
            self._dropped += 1

    def _report_dropped(self) -> None:
        if self._dropped:
            log.info(
                "child stderr lines not logged",
                extra={
                    "child": self._child,
                    "lines": self._dropped,
                    "limit_per_second": _STDERR_LOG_LINES_PER_SECOND,
                },
            )
            self._dropped = 0

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF can arrive."""
        self.writer.close()

    async def drained_tail(self) -> str:
        """The last lines, after waiting briefly for a dead child's final output to be read."""
        await anyio.to_thread.run_sync(self._thread.join, _STDERR_JOIN_SECONDS)
        return " | ".join(self.tail)


def _proc_stat(pid: str) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the name: state, ppid, pgrp, ..."""
    with open(f"/proc/{pid}/stat", "rb") as file:
        return file.read().rpartition(b")")[2].split()  # the name may hold spaces and parens


def _group_alive(pgid: int) -> bool:
    """Whether a live process is left in group `pgid` (a zombie is dead: its parent reaps it)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        try:  # no /proc: a signal probe, which counts zombies as alive
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for entry in entries:
        if entry.isdigit():
            try:
                fields = _proc_stat(entry)
                if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                    return True
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    return False


def signal_process_group(pgid: int, signum: signal.Signals) -> None:
    """Send `signum` to process group `pgid`; a group that is gone (or not ours) is left alone."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def _group_gone(pgid: int, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while True:  # polled: nothing signals the exit of processes that are not our children
            if not _group_alive(pgid):
                return True
            await anyio.sleep(_GROUP_POLL_SECONDS)
    return False


async def end_process_group(pgid: int) -> None:
    """SIGTERM what is left of a process group, then SIGKILL it after a grace period."""
    if not _group_alive(pgid):
        return
    log.info("stopping leftover processes of a child", extra={"pgid": pgid})
    signal_process_group(pgid, signal.SIGTERM)
    if await _group_gone(pgid, _GROUP_GRACE_SECONDS):
        return
    signal_process_group(pgid, signal.SIGKILL)
    if not await _group_gone(pgid, _GROUP_GRACE_SECONDS):
        log.warning("leftover processes of a child survived SIGKILL", extra={"pgid": pgid})
