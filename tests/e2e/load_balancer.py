"""Gateway replicas, and a real HAProxy on loopback in front of them: its config, and its process.

Each frontend is a port of its own with a backend of its own, so each has its own round robin. A
sticky backend pins a handshake-era session to the replica that created it: the first request of a
session (initialize) has no Mcp-Session-Id, so it is balanced like any other; the id the replica
answers with is stored against that replica (`stick store-response`), and every later request
carrying it is sent there (`stick match`). 2026-07-28 requests carry no session id: round robin.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
from anyio.abc import Process, TaskStatus

from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import WAIT

__all__ = [
    "HAPROXY",
    "NOT_INSTALLED",
    "Frontend",
    "free_ports",
    "haproxy",
    "haproxy_config",
    "ready",
    "replicas",
]

# Debian installs it in /usr/sbin, which is not on a user's PATH.
HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
NOT_INSTALLED = (
    "haproxy is not installed, and this needs a real load balancer: `make setup` installs it where "
    "apt-get runs as root, else `apt-get install haproxy`"
)
HAPROXY_WAIT = 30  # HAProxy checks its config and listens in milliseconds: this bounds a hang

# Handshake-era sessions answer 404 after http.session_idle_seconds (1800 s by default): a sticky
# entry needs to live no longer. Streams (SSE) stay open for minutes: so may the connections.
_CONFIG_HEAD = """\
global
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-request 30s
"""


@dataclass(frozen=True)
class Frontend:
    """A port on 127.0.0.1 balancing over `replicas` (host:port each), sticky to sessions or not."""

    name: str
    port: int
    replicas: Sequence[str]
    sticky: bool = True


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports on 127.0.0.1, free a moment ago (HAProxy cannot listen on port 0
    and say which): all are held open until each is chosen, so no two are the same."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def haproxy_config(frontends: Sequence[Frontend]) -> str:
    """The haproxy.cfg text: round robin per frontend, sticky on Mcp-Session-Id where asked."""
    parts = [_CONFIG_HEAD]
    for frontend in frontends:
        lines = [
            f"frontend {frontend.name}",
            f"    bind 127.0.0.1:{frontend.port}",
            f"    default_backend {frontend.name}_replicas",
            "",
            f"backend {frontend.name}_replicas",
            "    balance roundrobin",
            "    option httpchk GET /readyz",
        ]
        if frontend.sticky:
            lines += [
                "    stick-table type string len 64 size 100k expire 30m",
                "    stick match req.hdr(mcp-session-id)",
                "    stick store-response res.hdr(mcp-session-id)",
            ]
        lines += [
            f"    server r{index} {address} check inter 2s" for index, address in enumerate(frontend.replicas)
        ]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


async def _listening(process: Process, port: int) -> None:
    """Wait until HAProxy accepts connections on 127.0.0.1:port."""
    while True:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            assert process.returncode is None, f"haproxy exited ({process.returncode}) before listening"
            await anyio.sleep(0.05)
        else:
            await stream.aclose()
            return


@asynccontextmanager
async def haproxy(directory: Path, frontends: Sequence[Frontend]) -> AsyncIterator[Process]:
    """HAProxy in the foreground on `frontends`, its config in `directory/haproxy.cfg`; stopped at the end."""
    assert HAPROXY is not None, NOT_INSTALLED
    path = directory / "haproxy.cfg"
    path.write_text(haproxy_config(frontends), encoding="utf-8")
    with anyio.fail_after(HAPROXY_WAIT):
        checked = await anyio.run_process([HAPROXY, "-c", "-q", "-f", str(path)], check=False)
    assert checked.returncode == 0, f"haproxy refused its config:\n{checked.stderr.decode()}"
    # -db: stay in the foreground, not a daemon, so the process is this one and ends with it.
    process = await anyio.open_process(
        [HAPROXY, "-db", "-f", str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None
    )
    async with process:
        try:
            with anyio.fail_after(HAPROXY_WAIT):
                for frontend in frontends:
                    await _listening(process, frontend.port)
            yield process
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()  # SIGTERM: HAProxy stops at once
                    with anyio.move_on_after(HAPROXY_WAIT):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


@asynccontextmanager
async def replicas(configs: Sequence[Path], env: dict[str, str]) -> AsyncIterator[list[HttpGateway]]:
    """A `serve --http` process per config, started side by side; all signalled at once at the end."""
    done = anyio.Event()
    running: dict[int, HttpGateway] = {}

    async def hold(index: int, *, task_status: TaskStatus[None]) -> None:
        async with http_gateway(configs[index], env=env) as gateway:
            running[index] = gateway
            await ready(gateway)
            task_status.started()
            await done.wait()

    async with anyio.create_task_group() as tg:
        try:
            async with anyio.create_task_group() as starting:
                for index in range(len(configs)):
                    starting.start_soon(tg.start, hold, index)
            yield [running[index] for index in range(len(configs))]
        finally:
            for gateway in running.values():
                gateway.terminate()  # every shutdown runs at once; each context then waits for its own
            done.set()


async def ready(gateway: HttpGateway) -> None:
    """Wait until `/readyz` says 200, as a deployment would before adding the replica to the balancer."""
    async with httpx2.AsyncClient() as probe:
        with anyio.fail_after(WAIT):
            while (await probe.get(f"{gateway.base}/readyz")).status_code != 200:  # noqa: ASYNC110
                await anyio.sleep(0.1)
