"""`serve --pid-file PATH` and `codemode-gateway reload --pid-file PATH`: how the command finds the
gateway it reloads, over stdio and HTTP alike, without guessing.

The gateway writes its pid into PATH and holds an exclusive `flock` on it while it serves. `reload`
sends SIGHUP to that pid only while the lock is held: a pid file left behind by a gateway that died
is unlocked, so a pid reused by an unrelated process is never signalled. A lock does not stop a
write, so the pid must also be the lock's holder (Linux's /proc/locks; elsewhere, a process whose
command line names the gateway): a pid written into the file by anything else (a child that can
write there) is not signalled either. Beside PATH, `reload`
leaves a request (`PATH.request`, who asked: the gateway's audit record names them) and the gateway
writes the result of every reload (`PATH.status`), which `reload` waits for and prints.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from gateway.errors import ConfigError, GatewayError
from gateway.reload._reloader import ReloadResult

__all__ = ["PidFile", "request_reload"]

log = logging.getLogger("gateway.reload")

_POLL_SECONDS = 0.05  # how often `reload` looks for the gateway's answer


def _request_path(pid_file: Path) -> Path:
    return pid_file.with_name(pid_file.name + ".request")


def _status_path(pid_file: Path) -> Path:
    return pid_file.with_name(pid_file.name + ".status")


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    """A reader sees the old content or the new, never part of it. The partial file has a name
    nobody can guess and is created anew: a symlink planted beside the pid file is never written through."""
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(json.dumps(data))
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


class PidFile:
    """The gateway's side: the pid, locked while serving; requests taken, results written beside it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> Self:
        try:
            # Not through a symlink: one planted there would have the gateway truncate its target.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot write the pid file {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"the pid file {self.path} is held by another running gateway: give each its own"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        with contextlib.suppress(FileNotFoundError):
            _request_path(self.path).unlink()  # a request the last gateway never took is not ours
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is None:
            return
        for path in (self.path, _status_path(self.path)):
            with contextlib.suppress(OSError):
                path.unlink()  # before the lock goes: nobody finds a file naming a stopped gateway
        os.close(self._fd)
        self._fd = None

    def take_request(self) -> dict[str, Any] | None:
        """Who asked for the reload a SIGHUP brings, if `codemode-gateway reload` did; None otherwise."""
        path = _request_path(self.path)
        request = _read_json(path)
        with contextlib.suppress(OSError):
            path.unlink()
        if request is None:
            return None
        return {key: request[key] for key in ("pid", "user") if key in request}

    def write_status(self, result: ReloadResult) -> None:
        """Record a reload's result for `codemode-gateway reload` to read."""
        _write_atomically(_status_path(self.path), result.summary())


def _running_gateway(pid_file: Path) -> int:
    """The pid of the gateway holding `pid_file`, or GatewayError if no gateway holds it."""
    try:
        fd = os.open(pid_file, os.O_RDONLY)
    except OSError as exc:
        raise GatewayError(
            f"cannot read the pid file {pid_file}: {exc.strerror or exc} (is the gateway serving with "
            "--pid-file?)"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        else:
            raise GatewayError(
                f"no gateway holds the pid file {pid_file}: it is left from one that stopped, so its pid "
                "is not signalled"
            )
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not text.isdigit():
        raise GatewayError(f"the pid file {pid_file} holds no pid: {text!r}")
    pid = int(text)
    if not _is_the_gateway(pid, pid_file):
        raise GatewayError(
            f"the pid file {pid_file} names pid {pid}, which is not the gateway holding it: something "
            "else wrote it, so nothing was signalled; restart the gateway to apply its config"
        )
    return pid


def _lock_holders(path: Path) -> set[int] | None:
    """The pids holding a flock on `path` as /proc/locks lists them; None where there is none."""
    try:
        locks = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
        stat = os.stat(path)
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 8795 fe:00:2146365 0 EOF": the device in hex, the inode in decimal.
    inode = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    holders: set[int] = set()
    for line in locks.splitlines():
        fields = line.split()
        if "FLOCK" in fields and "->" not in fields and inode in fields:
            pid = fields[fields.index(inode) - 1]
            if pid.isdigit():
                holders.add(int(pid))
    return holders


def _command_line(pid: int) -> str:
    try:
        done = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def _is_the_gateway(pid: int, pid_file: Path) -> bool:
    """Whether `pid` holds the lock on `pid_file` (where the system lists lock holders), else whether
    its command line is a gateway's."""
    holders = _lock_holders(pid_file)
    if holders is not None:
        return pid in holders
    return "gateway" in _command_line(pid)


def request_reload(pid_file: Path, timeout: float) -> dict[str, Any]:
    """Ask the gateway holding `pid_file` to reload its config (SIGHUP) and return its result, as the
    status it writes; GatewayError if no gateway holds the file or none answers within `timeout`."""
    pid = _running_gateway(pid_file)
    status = _status_path(pid_file)
    before = (_read_json(status) or {}).get("attempt", 0)
    _write_atomically(_request_path(pid_file), {"pid": os.getpid(), "user": getpass.getuser()})
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = _read_json(status)
        if answer is not None and answer.get("attempt", 0) != before:
            return answer
        time.sleep(_POLL_SECONDS)
    raise GatewayError(f"the gateway (pid {pid}) did not report a reload within {timeout:g} s")
