"""Run the real `codemode-gateway` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

__all__ = ["WAIT", "run_command"]

WAIT = 90  # commands that start real child servers take their startup time


async def run_command(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int, str, str]:
    """Run `python -m gateway ARGS` without $CODEMODE_CONFIG; returns (exit code, stdout, stderr)."""
    environ = {k: v for k, v in os.environ.items() if k != "CODEMODE_CONFIG"} | (env or {})
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway", *args], env=environ, cwd=cwd, check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()
