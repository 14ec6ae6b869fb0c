"""Imports `codemode-gateway serve` once, then serves each gateway a launcher asks for in a fork of itself,
and each Python test child (`tests/servers/*.py`, which import the same SDK) too.

Run as a script by `tests/e2e/gateway_process.py` (argv[1]: the Unix socket to listen on). A launcher
(`serve_launcher.py`, what an MCP client spawns) connects, sends its stdin, stdout and stderr with a
request (a JSON object: `argv` after `codemode-gateway`, the whole `env`, `cwd`), and reads the forked
gateway's pid, then its exit code, one line each. The fork runs `gateway.cli.main` on those streams, in
that environment and directory, as `python -m gateway` would: what it does not repeat is the
interpreter's start and the imports, which cost most of a gateway's start. This process stays single
threaded (it forks), and ends when its stdin closes.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import socket
import sys
from pathlib import Path

# The command server's way of running a command (beside it, in tests/cli), then off the path again:
# this script's directory is no more on a gateway's path than that one.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "cli")
from fork_server import run_forked  # noqa: E402  # pyright: ignore[reportMissingImports, reportUnknownVariableType]

sys.path.pop(0)

POLL_SECONDS = 0.05  # how often ended gateways are looked for between requests


def _path_as_python_m() -> None:
    """The path as `python -m` starts it: the directory first, then PYTHONPATH's entries."""
    entries = [os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    sys.path[:0] = [entry for entry in entries if entry and entry not in sys.path]


def _start(listener: socket.socket, launchers: dict[int, socket.socket]) -> None:
    """Accept a launcher, fork its gateway, and tell it the gateway's pid."""
    launcher, _ = listener.accept()
    message, streams, _, _ = socket.recv_fds(launcher, 1 << 20, 3)
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        listener.close()
        launcher.close()
        for other in launchers.values():
            other.close()
        run_forked(request, streams, None if request.get("script") else _path_as_python_m)
    for stream in streams:
        os.close(stream)
    launcher.sendall(f"{pid}\n".encode())
    launchers[pid] = launcher


def _reap(launchers: dict[int, socket.socket]) -> None:
    """Tell each ended gateway's launcher its exit code."""
    while launchers:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        launcher = launchers.pop(pid, None)
        if launcher is not None:
            with contextlib.suppress(OSError):  # the launcher is gone already
                launcher.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            launcher.close()


def main() -> None:
    from gateway.cli import _main

    gc.disable()
    _main._command("serve")  # pyright: ignore[reportPrivateUsage]
    gc.enable()
    gc.freeze()  # what the imports built stays shared with each fork instead of being copied
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):  # left by an earlier process of the same pid
        os.unlink(sys.argv[1])
    listener.bind(sys.argv[1])
    listener.listen()
    print("listening", flush=True)
    launchers: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [], POLL_SECONDS)
        if sys.stdin in ready and not sys.stdin.readline():
            return  # the test process is done: gateways still running end with their clients
        if listener in ready:
            _start(listener, launchers)
        _reap(launchers)


if __name__ == "__main__":
    main()
