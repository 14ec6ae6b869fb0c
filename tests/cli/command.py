"""Run the real `codemode-gateway` command in a subprocess, as a user would."""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

__all__ = ["WAIT", "Commands", "run_command", "shared_commands"]

WAIT = 90  # commands that start real child servers take their startup time
FORK_SERVER = Path(__file__).with_name("fork_server.py")

Run = tuple[int, str, str]  # a command's exit code, stdout and stderr


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "CODEMODE_CONFIG"} | (env or {})


async def run_command(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    """Run `python -m gateway ARGS` without $CODEMODE_CONFIG; returns (exit code, stdout, stderr)."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway", *args], env=_environment(env), cwd=cwd, check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


class Commands:
    """Runs commands as `run_command` does, each in a process of its own, forked from one that has
    imported the command line already: a command then costs its own work, not the interpreter's start
    and the imports (most of its CPU). Where the fresh interpreter is the point (what a command imports,
    a site hook), tests use `run_command`."""

    def __init__(self) -> None:
        self._server = subprocess.Popen(
            [sys.executable, str(FORK_SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_environment(None),
            text=True,
        )
        self._lock = threading.Lock()

    def close(self) -> None:
        assert self._server.stdin is not None
        self._server.stdin.close()  # the server exits at the end of its requests
        try:
            self._server.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()

    def run_sync(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdin: str | None = None,
        whole_env: bool = False,
    ) -> Run:
        """`codemode-gateway ARGS` without $CODEMODE_CONFIG (with `stdin`, else an empty one); with
        `whole_env`, `env` is the command's whole environment, not additions to this process's."""
        request = {
            "argv": list(args),
            "env": dict(env or {}) if whole_env else _environment(env),
            "cwd": str(cwd) if cwd else None,
            "stdin": stdin,
        }
        assert self._server.stdin is not None
        assert self._server.stdout is not None
        with self._lock:
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
            # The one reply is all the server writes: nothing is left in the buffer between requests.
            ready, _, _ = select.select([self._server.stdout], [], [], WAIT)
            if not ready:
                self._server.kill()  # its late reply would answer the next request
                pytest.fail(f"codemode-gateway {' '.join(args)} did not exit within {WAIT} s")
            line = self._server.stdout.readline()
        if not line:
            pytest.fail(f"the command server exited ({self._server.poll()})")
        reply = json.loads(line)
        return reply["code"], reply["stdout"], reply["stderr"]

    async def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdin: str | None = None,
        whole_env: bool = False,
    ) -> Run:
        """`run_sync` from async code: the event loop keeps serving (a test's HTTP child) meanwhile."""
        with anyio.fail_after(WAIT):
            return await anyio.to_thread.run_sync(
                lambda: self.run_sync(*args, env=env, cwd=cwd, stdin=stdin, whole_env=whole_env),
                abandon_on_cancel=True,
            )


_shared: list[Commands] = []


def shared_commands() -> Commands:
    """This process's command server for helpers outside a test module's fixtures: started at its first
    use, closed when the process exits."""
    if not _shared:
        _shared.append(Commands())
        atexit.register(_shared[0].close)
    return _shared[0]
