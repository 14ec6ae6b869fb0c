"""A real `redis-server` for a test: on a free loopback port, nothing saved, stopped at the end."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process

__all__ = ["NOT_INSTALLED", "REDIS_SERVER", "RedisServer", "redis_server"]

REDIS_SERVER = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
NOT_INSTALLED = "redis-server is not installed, and this needs a real one: `apt-get install redis-server`"
START_WAIT = 30  # redis listens in milliseconds: this bounds a hang


@dataclass
class RedisServer:
    url: str
    process: Process


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _answers(port: int, process: Process) -> None:
    while True:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            assert process.returncode is None, f"redis-server exited ({process.returncode}) before listening"
            await anyio.sleep(0.05)
            continue
        async with stream:
            await stream.send(b"PING\r\n")
            if (await stream.receive()).startswith(b"+PONG"):
                return


@asynccontextmanager
async def redis_server(directory: Path) -> AsyncIterator[RedisServer]:
    """`redis-server` on 127.0.0.1, its working directory `directory`; stopped at the end."""
    assert REDIS_SERVER is not None, NOT_INSTALLED
    port = _free_port()
    command = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = await anyio.open_process(
        [*command, "--dir", str(directory)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    async with process:
        try:
            with anyio.fail_after(START_WAIT):
                await _answers(port, process)
            yield RedisServer(f"redis://127.0.0.1:{port}/0", process)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                    with anyio.move_on_after(START_WAIT):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
