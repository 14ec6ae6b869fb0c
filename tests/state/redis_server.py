"""A real `redis-server` on a loopback port for the tests: no persistence, stopped with the session.

`redis_server` (session-scoped) starts one; `redis_url` (per test) flushes it first and gives its URL.
A test may `stop()` it and `start()` it again on the same port (the store going away and coming back).
Where `redis-server` is not installed the tests that need it skip, saying how to install it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gateway.state.config import StateConfig

__all__ = ["NOT_INSTALLED", "PATIENT", "REDIS_SERVER", "RedisServer", "patient", "redis_server", "redis_url"]

# Debian installs it in /usr/bin; a source build in /usr/local/bin.
REDIS_SERVER = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/local/bin")
NOT_INSTALLED = (
    "redis-server is not installed, and this needs a real store: `make setup` installs it where "
    "apt-get runs as root, else `apt-get install redis-server`"
)
# What the gateway's Lua scripts run inside one EVALSHA (gateway/state/_rates.py, _caps.py); and INFO.
_INSIDE_SCRIPTS = frozenset({"time", "zremrangebyscore", "zcard", "zadd", "zrange", "pexpire", "info"})
START_SECONDS = 20.0  # redis-server answers PING within milliseconds: this bounds a hang
# A store's timeouts for tests that are not about them: an answer slowed by a busy machine must not
# turn into a refusal (the failure tests stop the store, which fails at once).
PATIENT = {"connect_timeout_seconds": 20.0, "command_timeout_seconds": 20.0}


def patient(url: str, *, lease_seconds: float = 30.0) -> StateConfig:
    """A `state` section for `url` with the PATIENT timeouts."""
    return StateConfig(
        url=url, connect_timeout_seconds=20.0, command_timeout_seconds=20.0, lease_seconds=lease_seconds
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _send(port: int, command: bytes) -> bytes:
    """One inline command to the server, and the first line of its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
        conn.sendall(command + b"\r\n")
        return conn.makefile("rb").readline().strip()


class RedisServer:
    """One `redis-server` process on 127.0.0.1:`port`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start it (again) on its port, and wait until it answers PING."""
        assert REDIS_SERVER is not None, NOT_INSTALLED
        assert not self.running, "already running"
        self._process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert self._process.poll() is None, f"redis-server exited ({self._process.returncode})"
            try:
                if _send(self.port, b"PING") == b"+PONG":
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, f"redis-server did not answer within {START_SECONDS} s"
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop it (SIGKILL: a store that goes away, not one that shuts down politely)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=START_SECONDS)
        self._process = None

    def flush(self) -> None:
        """Forget every key."""
        assert _send(self.port, b"FLUSHALL") == b"+OK"

    def commands_processed(self) -> int:
        """`INFO stats` total_commands_processed: every command run, those inside scripts included."""
        for line in self._info(b"stats").splitlines():
            if line.startswith("total_commands_processed:"):
                return int(line.split(":", 1)[1])
        raise AssertionError("INFO stats has no total_commands_processed")

    def round_trips(self) -> int:
        """Commands clients sent (`INFO commandstats`), not counting those the gateway's scripts run
        inside one EVALSHA, nor INFO itself: one each is a round trip."""
        total = 0
        for line in self._info(b"commandstats").splitlines():
            if line.startswith("cmdstat_"):
                name, _, stats = line[len("cmdstat_") :].partition(":")
                calls = int(stats.split(",", 1)[0].removeprefix("calls="))
                total += 0 if name in _INSIDE_SCRIPTS else calls
        return total

    def _info(self, section: bytes) -> str:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
            conn.sendall(b"INFO " + section + b"\r\n")
            reader = conn.makefile("rb")
            size = int(reader.readline()[1:])
            return reader.read(size + 2).decode()


@contextmanager
def own_redis_server() -> Iterator[RedisServer]:
    """A redis-server of the caller's own (one it may stop or kill), stopped afterwards."""
    server = RedisServer(_free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server for the session; skips where it is not installed."""
    if REDIS_SERVER is None:
        pytest.skip(NOT_INSTALLED)
    server = RedisServer(_free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's redis-server, running and emptied for this test: its URL."""
    if not redis_server.running:
        redis_server.start()  # a test before this one stopped it
    redis_server.flush()
    return redis_server.url
