"""Driving the real gateway process over streamable HTTP: `codemode-gateway serve --http --port 0`,
and the SDK's `Client` on it, with every HTTP answer's status and headers recorded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import Process
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.gateway_process import WAIT, environment

LISTENING = "serving MCP over HTTP"


@dataclass
class HttpGateway:
    """A running `serve --http` process: where it listens, and what it has logged so far."""

    url: str  # the MCP endpoint
    process: Process
    logs: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    lines: list[bytes] = field(default_factory=list[bytes])  # stderr as written, for what a terminal shows
    exited: anyio.Event = field(default_factory=anyio.Event)
    terminated: bool = False
    new_record: anyio.Event = field(default_factory=anyio.Event)

    @property
    def base(self) -> str:
        """scheme://host:port, for the probes."""
        return self.url.rsplit("/", 1)[0]

    def messages(self) -> list[str]:
        return [str(record.get("msg")) for record in self.logs]

    async def logged(self, message: str) -> None:
        """Wait until the gateway has logged `message`."""
        while message not in self.messages():
            await self.new_record.wait()

    def terminate(self) -> None:
        """SIGTERM, once: a second one would end the process at once, as it ends any process."""
        if not self.terminated and self.process.returncode is None:
            self.terminated = True
            self.process.send_signal(signal.SIGTERM)

    async def stop(self) -> int:
        """SIGTERM (unless sent already), and wait (bounded) for the process to exit; its exit code."""
        self.terminate()
        with anyio.fail_after(WAIT):
            return await self.process.wait()


# Runs the rest of the command line in this interpreter with at most N open descriptors (argv[1]).
_LIMIT_FILES = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


@asynccontextmanager
async def http_gateway(
    config: Path,
    *,
    env: dict[str, str] | None = None,
    max_files: int | None = None,
    log_level: str | None = "INFO",
) -> AsyncIterator[HttpGateway]:
    """`codemode-gateway serve --http --port 0 --config CONFIG`, once it listens; SIGTERM at the end.
    With `max_files`, the process may hold at most that many descriptors (RLIMIT_NOFILE); with
    `log_level` None, it logs at the default level."""
    levels = ["--log-level", log_level] if log_level is not None else []
    command = [sys.executable, "-m", "gateway", *levels, "serve", "--http", "--port", "0"]
    if max_files is not None:
        command = [sys.executable, "-c", _LIMIT_FILES, str(max_files), *command[1:]]
    process = await anyio.open_process(
        [*command, "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env or environment(),
    )
    listening = anyio.Event()
    gateway = HttpGateway("", process)

    async def read_logs() -> None:
        assert process.stderr is not None
        pending = b""
        try:
            async for chunk in process.stderr:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    gateway.lines.append(line)
                    try:
                        record = json.loads(line)
                    except ValueError:
                        record = {"msg": line.decode(errors="replace")}
                    gateway.logs.append(record)
                    gateway.new_record.set()
                    gateway.new_record = anyio.Event()
                    if record.get("msg") == LISTENING and not listening.is_set():
                        gateway.url = record["url"]
                        listening.set()
        finally:  # also when cancelled: the cleanup below must not wait WAIT for a reader that is gone
            gateway.exited.set()
            gateway.new_record.set()
            listening.set()  # it ended before listening: the test sees an empty url

    async with process, anyio.create_task_group() as tg:
        tg.start_soon(read_logs)
        try:
            with anyio.fail_after(WAIT):
                await listening.wait()
            assert gateway.url, f"the gateway exited before listening: {gateway.messages()}"
            yield gateway
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    gateway.terminate()
                    with anyio.move_on_after(WAIT):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                with anyio.move_on_after(WAIT):
                    await gateway.exited.wait()
            # Pytest shows a failing test's stderr: the gateway's own errors say what went wrong inside.
            for record in gateway.logs:
                if record.get("level") in ("error", "critical"):
                    print(json.dumps(record), file=sys.stderr)


class User:
    """The person at the client: accepts every approval, remembering each prompt."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action="accept", content={})


@dataclass
class Answers:
    """Every HTTP answer a client got: status and headers, in order."""

    seen: list[httpx2.Response] = field(default_factory=list[httpx2.Response])

    async def __call__(self, response: httpx2.Response) -> None:
        self.seen.append(response)

    def with_status(self, status: int) -> list[httpx2.Response]:
        return [response for response in self.seen if response.status_code == status]


@asynccontextmanager
async def http_client(
    url: str,
    mode: ConnectMode = "auto",
    *,
    elicitation: ElicitationFnT | None = None,
    messages: MessageHandlerFnT | None = None,
    answers: Answers | None = None,
    token: str | None = None,
) -> AsyncIterator[Client]:
    """The SDK's `Client` over streamable HTTP: `mode="auto"` negotiates 2026-07-28, `"legacy"` the
    handshake era (a session). `messages` sees what the server sends on its own; `answers` records
    every HTTP answer the client gets; `token` is sent as a bearer token."""
    hooks: dict[str, list[Any]] = {"response": [answers] if answers is not None else []}
    # Timeouts as the SDK's own client has them: a response stream may stay open for minutes.
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(timeout=timeout, event_hooks=hooks, headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport,
            mode=mode,
            elicitation_callback=elicitation,
            message_handler=messages,
            read_timeout_seconds=WAIT,
        ) as client:
            yield client
