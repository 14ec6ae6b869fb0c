"""The stdio handshake is answered first; every other request waits until the gateway has started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.server._start_gate import StartGate

pytestmark = pytest.mark.anyio

WAIT = 60


class Calls:
    """What reached the handler behind the gate, and how often the gate asked the gateway to start."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.starts = 0

    def start_now(self) -> None:
        self.starts += 1

    async def call_next(self, ctx: Any) -> dict[str, Any]:
        self.handled.append(ctx.method)
        return {}


def request(method: str) -> Any:
    return SimpleNamespace(method=method)


@pytest.mark.parametrize("method", ["initialize", "server/discover", "ping"])
async def test_the_handshake_and_pings_pass_before_the_gateway_has_started(method: str) -> None:
    calls = Calls()
    gate = StartGate(calls.start_now)
    with anyio.fail_after(WAIT):
        await gate(request(method), calls.call_next)
    assert calls.handled == [method]
    assert calls.starts == (0 if method == "ping" else 1)  # answered: nothing left to wait for


@pytest.mark.parametrize("method", ["tools/list", "tools/call", "subscriptions/listen", "tasks/get"])
async def test_any_other_request_starts_the_gateway_at_once_and_waits_for_the_gate(method: str) -> None:
    calls = Calls()
    gate = StartGate(calls.start_now)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(gate, request(method), calls.call_next)
            await anyio.wait_all_tasks_blocked()
            assert calls.handled == []
            assert calls.starts == 1  # a 2026-07-28 client may send no handshake: no head start to give
            gate.open()
    assert calls.handled == [method]


async def test_an_open_gate_lets_requests_straight_through() -> None:
    calls = Calls()
    gate = StartGate(calls.start_now)
    gate.open()
    with anyio.fail_after(WAIT):
        await gate(request("tools/call"), calls.call_next)
    assert calls.handled == ["tools/call"]


async def test_a_failed_handshake_still_starts_the_gateway() -> None:
    calls = Calls()
    gate = StartGate(calls.start_now)

    async def refuse(ctx: Any) -> dict[str, Any]:
        raise ValueError("unsupported protocol version")

    with anyio.fail_after(WAIT), pytest.raises(ValueError, match="unsupported"):
        await gate(request("initialize"), refuse)
    assert calls.starts == 1


def message(method: str, params: dict[str, Any] | None = None, id_: int | None = None) -> bytes:
    sent: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if id_ is not None:
        sent["id"] = id_
    return (json.dumps(sent) + "\n").encode()


INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}


async def test_the_gateway_answers_initialize_while_its_start_is_still_blocked(tmp_path: Path) -> None:
    # The audit log is a FIFO: opening it for writing blocks the gateway's start (its event loop too)
    # until something reads it. Had the gateway started before the handshake, initialize would wait.
    audit = tmp_path / "audit.fifo"
    os.mkfifo(audit)
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {}, "audit": {"path": str(audit)}}), encoding="utf-8")
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
    reader: int | None = None
    with anyio.fail_after(WAIT):
        async with await anyio.open_process(command, stderr=subprocess.DEVNULL) as gateway:
            assert gateway.stdin is not None
            assert gateway.stdout is not None
            answers = BufferedByteReceiveStream(gateway.stdout)
            try:
                await gateway.stdin.send(message("initialize", INITIALIZE, id_=1))
                answer = json.loads(await answers.receive_until(b"\n", 1 << 20))
                assert answer["id"] == 1
                assert answer["result"]["serverInfo"]["name"] == "codemode-gateway"

                await gateway.stdin.send(message("notifications/initialized"))
                await gateway.stdin.send(message("tools/list", id_=2))
                reader = os.open(audit, os.O_RDONLY | os.O_NONBLOCK)  # the start goes on; the gate opens
                listed = json.loads(await answers.receive_until(b"\n", 1 << 20))
                assert [tool["name"] for tool in listed["result"]["tools"]] == ["search_docs", "execute_code"]
            finally:
                await gateway.stdin.aclose()
                assert await gateway.wait() == 0
                if reader is not None:
                    os.close(reader)
