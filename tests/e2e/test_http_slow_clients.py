"""Slow and idle HTTP clients against the real gateway process: connections past the per-address cap,
heads and bodies that never finish arriving, and one caller's requests past its cap. Each attack is
contained, and an authenticated caller is served meanwhile and afterwards.

Two gateways serve the module, grouped by the limits the tests need: a patient one (descriptors held
to 300, a per-address cap, callers' caps) and an impatient one (one-second head and body timeouts)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream

from tests.e2e.client_views import text_view
from tests.e2e.gateway_http import WAIT, HttpGateway, http_client, http_gateway
from tests.e2e.gateway_process import environment, write_config
from tests.e2e.http_children import http_children
from tests.e2e.test_http import INITIALIZE as HANDSHAKE_INITIALIZE
from tests.real_servers import TINY_SERVER, built

pytestmark = pytest.mark.anyio

ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40
ATTACKER_HOST = "127.0.0.2"  # loopback too, but another client address than the callers' 127.0.0.1
HALF_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
INITIALIZE = json.dumps(HANDSHAKE_INITIALIZE).encode()


def config(tmp_path: Path, children: dict[str, Any], http: dict[str, Any]) -> Path:
    return write_config(
        tmp_path,
        {
            "mcpServers": children,
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}},
            "http": http,
        },
    )


def env() -> dict[str, str]:
    return environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})


IDLE_OPENED, PER_ADDRESS_CAP = 290, 16
REQUESTS_CAP = 3
PATIENT = {
    "max_connections_per_address": PER_ADDRESS_CAP,
    "header_timeout_seconds": 3600,
    "body_timeout_seconds": 3600,
    "max_requests_in_flight_per_caller": REQUESTS_CAP,
    "max_executions_in_flight_per_caller": 1,
    "max_executions_queued_per_caller": 0,
}
IMPATIENT = {"header_timeout_seconds": 1, "body_timeout_seconds": 1}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that each gateway below serves every test of this module that needs its limits."""
    return "asyncio"


@pytest.fixture(scope="module")
async def tiny() -> AsyncIterator[dict[str, Any]]:
    """The tiny test server, served over HTTP from this process for both gateways."""
    async with http_children({"tiny": built(TINY_SERVER)}) as children:
        yield children


@pytest.fixture(scope="module")
async def patient(
    tmp_path_factory: pytest.TempPathFactory, tiny: dict[str, Any]
) -> AsyncIterator[HttpGateway]:
    """Under 300 descriptors, 290 idle connections would leave the gateway none to accept a caller with."""
    path = config(tmp_path_factory.mktemp("patient"), tiny, PATIENT)
    async with http_gateway(path, env=env(), max_files=300) as gateway:
        yield gateway


@pytest.fixture(scope="module")
async def impatient(
    tmp_path_factory: pytest.TempPathFactory, tiny: dict[str, Any]
) -> AsyncIterator[HttpGateway]:
    path = config(tmp_path_factory.mktemp("impatient"), tiny, IMPATIENT)
    async with http_gateway(path, env=env()) as gateway:
        yield gateway


async def connect(gateway: HttpGateway, local_host: str = ATTACKER_HOST) -> SocketStream:
    address = urlsplit(gateway.url)
    assert address.hostname is not None
    assert address.port is not None
    return await anyio.connect_tcp(address.hostname, address.port, local_host=local_host)


async def read_until_closed(stream: SocketStream) -> bytes:
    """Everything the gateway sends on `stream` until it closes the connection."""
    received = b""
    try:
        while True:
            received += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):  # closed, or reset
        return received


def stalled_post(gateway: HttpGateway, token: str, *, declared: int, expect_continue: bool = False) -> bytes:
    """The head of a POST to the MCP endpoint that declares a `declared`-byte body."""
    address = urlsplit(gateway.url)
    lines = [
        f"POST {address.path} HTTP/1.1",
        f"Host: {address.netloc}",
        f"Authorization: Bearer {token}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {declared}",
        *(["Expect: 100-continue"] if expect_continue else []),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def an_authenticated_call_succeeds(gateway: HttpGateway) -> None:
    async with http_client(gateway.url, token=ALICE) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("execute_code", {"code": "tools.tiny.echo(text='served')"})
    assert not result.is_error
    assert text_view(result) == "{'result': 'served'}"


async def test_idle_connections_past_the_per_address_cap_are_closed_at_accept_and_callers_are_served(
    patient: HttpGateway,
) -> None:
    gateway, opened, cap = patient, IDLE_OPENED, PER_ADDRESS_CAP
    closed = 0
    enough_closed = anyio.Event()

    async def hold(stream: SocketStream) -> None:
        nonlocal closed
        await read_until_closed(stream)
        closed += 1
        if closed >= opened - cap:
            enough_closed.set()

    async with anyio.create_task_group() as holders:
        streams: list[SocketStream] = []
        with anyio.fail_after(WAIT):
            for _ in range(opened):
                stream = await connect(gateway)
                await stream.send(HALF_HEAD)
                streams.append(stream)
                holders.start_soon(hold, stream)
        await an_authenticated_call_succeeds(gateway)
        with anyio.fail_after(WAIT):
            await enough_closed.wait()
        assert closed >= opened - cap
        holders.cancel_scope.cancel()
        for stream in streams:
            await stream.aclose()
    assert "HTTP connections refused: too many from one address" in gateway.messages()


async def test_connections_without_a_whole_request_head_in_time_are_closed_and_callers_are_served(
    impatient: HttpGateway,
) -> None:
    gateway = impatient
    silent = await connect(gateway)
    half = await connect(gateway)
    await half.send(HALF_HEAD)
    trickling = await connect(gateway)
    between_requests = await connect(gateway)
    await between_requests.send(HALF_HEAD + b"\r\n")  # a whole request, answered

    async def trickle() -> None:
        await trickling.send(HALF_HEAD)
        while True:  # one more header byte at a time, until the gateway closes the connection
            await trickling.send(b"X")
            await anyio.sleep(0.1)

    with anyio.fail_after(WAIT):
        answer = b""
        while b"alive" not in answer:
            answer += await between_requests.receive()
        await between_requests.send(HALF_HEAD)  # then half of the next one, on the same connection
        async with anyio.create_task_group() as trickler:
            trickler.start_soon(trickle)
            assert await read_until_closed(trickling) == b""
            trickler.cancel_scope.cancel()
        for stream in (silent, half, between_requests):
            assert await read_until_closed(stream) == b""
    assert answer.startswith(b"HTTP/1.1 200")
    await an_authenticated_call_succeeds(gateway)


async def test_a_body_that_stalls_is_answered_408_naming_the_limit_and_callers_are_served(
    impatient: HttpGateway,
) -> None:
    gateway, declared = impatient, 4 * 1024 * 1024
    logged_before = len(gateway.logs)
    stalled: list[SocketStream] = []
    for _ in range(4):
        stream = await connect(gateway, "127.0.0.1")
        with anyio.fail_after(WAIT):
            await stream.send(stalled_post(gateway, ALICE, declared=declared))
            await stream.send(b" " * (declared - 200))
        stalled.append(stream)
    probe = await connect(gateway)  # a route that answers without reading the body
    await probe.send(b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{")
    with anyio.fail_after(WAIT):
        answers = [await read_until_closed(stream) for stream in stalled]
        await read_until_closed(probe)
    for answer in answers:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408")
        assert b"connection: close" in head.lower()
        error = json.loads(body)["error"]
        assert "http.body_timeout_seconds (1 s)" in error["message"]
        assert error["data"] == {"key": "http.body_timeout_seconds", "value": 1.0}
    await an_authenticated_call_succeeds(gateway)
    late = [
        record
        for record in gateway.logs[logged_before:]
        if record.get("msg") == "Error handling POST request"
    ]
    assert not late  # a late body reaches no session


async def test_a_caller_past_its_requests_in_flight_is_refused_429_naming_the_limit_while_another_is_served(
    patient: HttpGateway,
) -> None:
    gateway, cap = patient, REQUESTS_CAP
    held: list[SocketStream] = []
    for _ in range(cap):
        stream = await connect(gateway, "127.0.0.1")
        with anyio.fail_after(WAIT):
            await stream.send(stalled_post(gateway, ALICE, declared=1000, expect_continue=True))
            # The gateway asks for the body once the request holds its place.
            assert (await stream.receive()).startswith(b"HTTP/1.1 100")
        held.append(stream)
    headers = {
        "Authorization": f"Bearer {ALICE}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient() as http_alice:
        with anyio.fail_after(WAIT):
            refused = await http_alice.post(gateway.url, content=INITIALIZE, headers=headers)
        async with http_client(gateway.url, token=BOB) as bob:
            with anyio.fail_after(WAIT):
                result = await bob.call_tool("execute_code", {"code": "'bob ran'"})
        assert not result.is_error
        assert text_view(result) == "'bob ran'"
        for stream in held:
            await stream.aclose()
        with anyio.fail_after(WAIT):
            while True:  # her held requests end once the gateway reads their connections' close
                answer = await http_alice.post(gateway.url, content=INITIALIZE, headers=headers)
                if answer.status_code != 429:
                    break
                await anyio.sleep(0.1)
    assert refused.status_code == 429
    assert refused.headers["retry-after"]
    error = refused.json()["error"]
    assert f"http.max_requests_in_flight_per_caller = {cap}" in error["message"]
    assert error["data"] == {"key": "http.max_requests_in_flight_per_caller", "value": cap}
    assert answer.status_code == 200
