"""What starts a reload while the gateway serves: SIGHUP (from anyone, or from `codemode-gateway reload`
through the pid file), and a change to the config file, watched with watchfiles."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream
from watchfiles import awatch  # pyright: ignore[reportUnknownVariableType]

from gateway.calls import Gateway
from gateway.reload._pidfile import PidFile
from gateway.reload._reach import reach_warnings
from gateway.reload._reloader import Reloader

__all__ = ["ReloadOptions", "serve_reloads"]

log = logging.getLogger("gateway.reload")

QUIET_MS = 250
"""A change is looked at once the file has had no other change for this long (watchfiles' `step`)."""

WATCH_TIMEOUT_MS = 500
"""How long the watcher's thread waits for a change before it reports a quiet spell; it looks at its
stop event every QUIET_MS meanwhile. The first report is what logs that the watch is in place, which
operators and scripts wait for, so it is short (a quiet spell costs one thread hop)."""

UNPARSED_SETTLE_SECONDS = 2.0
"""A file that is not valid JSON is taken as still being written: it is reloaded (and refused, with
the errors logged) only if nothing changes it for this long."""


@dataclass(frozen=True, slots=True)
class ReloadOptions:
    """How a serving gateway takes reloads: `watch` the config file; a `pid_file` for `reload`."""

    watch: bool = True
    pid_file: Path | None = None


async def serve_reloads(
    gateway: Gateway, options: ReloadOptions, *, task_status: TaskStatus[Reloader] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Reload `gateway`'s config on SIGHUP, and on changes to its file when `options.watch`, until
    cancelled; the pid file is held meanwhile. Started with `task_group.start`, it gives its Reloader."""
    reloader = Reloader(gateway)
    reloader.pid_file = options.pid_file
    for warning in reach_warnings(gateway.config, options.pid_file):
        log.warning("a child may reach the gateway's own files", extra={"warning": warning})
    with PidFile(options.pid_file) if options.pid_file else _NoPidFile() as pid_file:
        if isinstance(pid_file, PidFile):
            reloader.listeners.append(pid_file.write_status)
        async with anyio.create_task_group() as triggers:
            triggers.start_soon(reloader.close_replaced_sandboxes)
            await triggers.start(_on_sighup, reloader, pid_file)
            if options.watch and reloader.config_file is not None:
                await triggers.start(_on_change, reloader, reloader.config_file)
            task_status.started(reloader)


class _NoPidFile:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


async def _on_sighup(
    reloader: Reloader, pid_file: PidFile | None, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    if threading.current_thread() is not threading.main_thread():
        task_status.started()  # signal handlers can only be installed by the main thread
        return
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        task_status.started()
        async for _ in signals:
            requested = pid_file.take_request() if pid_file is not None else None
            await reloader.reload("signal" if requested is None else "cli", requested)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # gone for a moment (an editor replacing it), or unreadable: nothing to load yet
        return None


def _parses(content: bytes) -> bool:
    try:
        json.loads(content)
    except ValueError:
        return False
    return True


async def _on_change(
    reloader: Reloader, path: Path, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Reload when the file's content changes. The directory is watched, not the file: an editor that
    saves by writing a new file and renaming it over the old one replaces the file watched."""
    changed, changes = anyio.create_memory_object_stream[None](1)
    seen = _read(path)
    async with anyio.create_task_group() as group:
        await group.start(_watch, path, changed)
        task_status.started()
        while True:
            await changes.receive()
            content = _read(path)
            # A file still being written (not JSON yet) waits for the writer's next change.
            while content is not None and content != seen and not _parses(content):
                with anyio.move_on_after(UNPARSED_SETTLE_SECONDS) as settle:
                    await changes.receive()
                content = _read(path)
                if settle.cancelled_caught:
                    break
            if content is None or content == seen:
                continue  # touched, saved unchanged, or removed: there is nothing new to load
            seen = content
            await reloader.reload("file")


async def _watch(
    path: Path,
    changed: MemoryObjectSendStream[None],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Send on `changed` after each quiet spell following changes to `path` (one pending at most), and
    once when the watch is in place: a change made while it was being set up is not missed."""
    name = path.name

    def ours(_: object, changed_path: str) -> bool:
        return Path(changed_path).name == name

    stop = anyio.Event()

    async def stop_when_cancelled() -> None:
        # The watcher's thread cannot be interrupted: told to stop at once, it returns within QUIET_MS.
        try:
            await anyio.sleep_forever()
        finally:
            stop.set()

    in_place = False
    async with anyio.create_task_group() as group:
        group.start_soon(stop_when_cancelled)
        task_status.started()
        async for found in awatch(
            path.parent,
            watch_filter=ours,
            step=QUIET_MS,
            rust_timeout=WATCH_TIMEOUT_MS,
            yield_on_timeout=True,
            recursive=False,
            stop_event=stop,
        ):
            if not found and in_place:
                continue  # a quiet spell
            if not in_place:
                in_place = True
                log.info("watching the config file for changes", extra={"path": str(path)})
            with contextlib.suppress(anyio.WouldBlock):  # a look is due already: it reads the file then
                changed.send_nowait(None)
