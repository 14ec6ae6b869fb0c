"""A stdio child spawned and read by the gateway itself: messages both ways, each line capped as it is read,
bounded memory for a flood, and a child stopped whatever it does."""

from __future__ import annotations

import json
import logging
import os
import sys
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pydantic
import pytest
from mcp import types
from mcp.shared.message import SessionMessage

from gateway.children._env import child_environment
from gateway.children._message_cap import too_large
from gateway.children._process import StderrPump
from gateway.children._stdio import StdioChild, open_stdio_child

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="the gateway reads a stdio child itself on POSIX"),
]

WAIT = 30  # bounds a hang; each wait below ends on the child's output long before it
CAP = 1024

PY_ECHO = (
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()"
)


def writes(*pieces: bytes | str) -> str:
    """A child writing each piece to stdout (a str: a Python expression of bytes), then waiting on stdin."""
    lines = ["import json, sys", "out = sys.stdout.buffer"]
    for piece in pieces:
        lines += [f"out.write({piece if isinstance(piece, str) else repr(piece)})", "out.flush()"]
    return "\n".join([*lines, "sys.stdin.read()"])


def response_expr(message_id: int, size: int) -> str:
    """A Python expression: a JSON-RPC response of `size` characters of result, its id last (as Node)."""
    return (
        f"json.dumps({{'result': {{'content': [{{'type': 'text', 'text': 'r' * {size}}}]}}, "
        f"'jsonrpc': '2.0', 'id': {message_id}}}).encode()"
    )


def response_bytes(message_id: int, size: int) -> bytes:
    result = {"content": [{"type": "text", "text": "r" * size}]}
    return json.dumps({"result": result, "jsonrpc": "2.0", "id": message_id}).encode()


@asynccontextmanager
async def spawned(
    *command: str, cap: int = CAP, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[StdioChild, StderrPump]]:
    """The child as the gateway spawns it, and the pump its stderr goes to."""
    pump = StderrPump("kid")
    try:
        async with open_stdio_child(
            command[0],
            list(command[1:]),
            env=child_environment({}) if env is None else env,
            cwd=None,
            errlog=pump.writer,
            max_message_bytes=cap,
            child="kid",
        ) as child:
            yield child, pump
    finally:
        pump.close_writer()


def python(script: str) -> tuple[str, str, str]:
    return sys.executable, "-c", script


async def received(child: StdioChild) -> types.JSONRPCMessage:
    item = await child.read.receive()
    assert isinstance(item, SessionMessage), item
    return item.message


def is_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


async def test_what_the_session_sends_reaches_the_child_and_what_it_writes_reaches_the_session() -> None:
    ping = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
    with anyio.fail_after(WAIT):
        async with spawned(*python(PY_ECHO)) as (child, _):
            await child.write.send(SessionMessage(ping))
            assert await received(child) == ping
            note = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": 1})
            await child.write.send(SessionMessage(note))
            assert await received(child) == note


async def test_a_line_that_is_not_json_rpc_reaches_the_session_as_an_error_and_the_next_one_passes() -> None:
    with anyio.fail_after(WAIT):
        async with spawned(
            *python(writes(b"hello, not JSON\n", b'{"jsonrpc": "2.0", "id": 2, "result": {}}\n'))
        ) as (
            child,
            _,
        ):
            garbage = await child.read.receive()
            assert isinstance(garbage, pydantic.ValidationError)
            assert garbage.errors()[0]["input"] == b"hello, not JSON"
            answer = await received(child)
            assert isinstance(answer, types.JSONRPCResponse)
            assert answer.id == 2


@pytest.mark.parametrize("piece", [None, 1000], ids=["one-write", "many-writes"])
async def test_a_response_past_the_cap_reaches_the_session_as_the_error_for_its_id(piece: int | None) -> None:
    big = response_bytes(41, 20_000)
    pieces = [big] if piece is None else [big[at : at + piece] for at in range(0, len(big), piece)]
    after = b'{"jsonrpc": "2.0", "id": 42, "result": {}}\n'
    with anyio.fail_after(WAIT):
        async with spawned(*python(writes(*pieces, b"\n", after))) as (child, _):
            stand_in = await received(child)
            assert isinstance(stand_in, types.JSONRPCError)
            assert stand_in.id == 41
            assert stand_in.error.message == too_large(len(big), CAP)
            next_answer = await received(child)
            assert isinstance(next_answer, types.JSONRPCResponse)
            assert next_answer.id == 42


async def test_a_response_exactly_at_the_cap_arrives_whole_and_one_a_byte_longer_is_refused() -> None:
    at_cap = response_bytes(1, 100)
    past = response_bytes(2, 101)
    with anyio.fail_after(WAIT):
        async with spawned(*python(writes(at_cap + b"\n", past + b"\n")), cap=len(at_cap)) as (child, _):
            whole = await received(child)
            assert isinstance(whole, types.JSONRPCResponse)
            assert whole.result == {"content": [{"type": "text", "text": "r" * 100}]}
            refused = await received(child)
            assert isinstance(refused, types.JSONRPCError)
            assert (refused.id, refused.error.message) == (2, too_large(len(past), len(at_cap)))


async def test_an_oversized_notification_is_dropped_with_a_warning_and_the_next_message_arrives(
    child_log: list[logging.LogRecord],
) -> None:
    note = "json.dumps({'jsonrpc': '2.0', 'method': 'notifications/message', 'params': {'data': 'n' * 5000}})"
    size = len(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * 5000}})
    )
    with anyio.fail_after(WAIT):
        async with spawned(*python(writes(f"{note}.encode() + b'\\n'", response_expr(3, 10), b"\n"))) as (
            child,
            _,
        ):
            answer = await received(child)
            assert isinstance(answer, types.JSONRPCResponse)
            assert answer.id == 3
    [dropped] = [r for r in child_log if r.getMessage() == "child message dropped"]
    assert (dropped.levelname, getattr(dropped, "child", None)) == ("WARNING", "kid")
    assert getattr(dropped, "detail", None) == (
        f"dropped a message (notification) of {size} bytes, over the 1024-byte cap (max_message_bytes)"
    )


async def test_a_flood_of_200_mb_without_a_newline_is_read_in_bounded_memory_and_ends_the_stream(
    child_log: list[logging.LogRecord],
) -> None:
    flood = "head -c 200000000 /dev/zero | tr '\\0' x"
    tracemalloc.start()
    try:
        with anyio.fail_after(WAIT):
            async with spawned("sh", "-c", flood) as (child, _):
                with pytest.raises(anyio.EndOfStream):
                    await child.read.receive()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The cap, a read, and the event loop's pipe buffer (paused past its high-water mark).
    assert peak < 2 * 1024 * 1024, f"{peak // 1024} KiB at the peak while reading 200 MB"
    details = [getattr(r, "detail", "") for r in child_log if r.getMessage() == "child message dropped"]
    assert details == [
        "dropped an unfinished message of 200000000 bytes, over the 1024-byte cap (max_message_bytes)"
    ]


async def test_the_child_gets_exactly_the_environment_it_is_given_and_its_stderr_goes_to_the_log() -> None:
    base = {"PATH": os.environ["PATH"], "ENTRY_VAR": "from the entry"}
    for env in (base, {**base, "LC_CTYPE": "C"}):
        with anyio.fail_after(WAIT):
            async with spawned("sh", "-c", "env; echo to stderr >&2", env=env) as (child, pump):
                lines: list[bytes] = []
                async for item in child.read:
                    assert isinstance(item, pydantic.ValidationError)  # env's lines are not JSON-RPC
                    lines.append(item.errors()[0]["input"])
            assert await pump.drained_tail() == "to stderr"
        # `sh` adds PWD (and may add SHLVL, _): only the variables it was given otherwise.
        seen = dict(line.decode().split("=", 1) for line in lines)
        assert {k: v for k, v in seen.items() if k not in ("PWD", "SHLVL", "_")} == env


async def test_a_command_that_cannot_be_started_raises_the_os_error() -> None:
    with anyio.fail_after(WAIT), pytest.raises(FileNotFoundError):
        async with spawned("/nonexistent/codemode-no-such-server"):
            pass


IGNORES_TERM = (
    "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    'sys.stdout.write(\'{"jsonrpc": "2.0", "method": "ready"}\\n\'); sys.stdout.flush()\n'
    "sys.stdin.close()\ntime.sleep(600)"
)


@pytest.mark.parametrize("cancelled", [False, True], ids=["left", "cancelled"])
async def test_a_child_that_ignores_its_stdin_and_sigterm_is_killed_when_the_connection_ends(
    cancelled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This child waits out every grace period whatever its length: short ones reach SIGKILL sooner.
    monkeypatch.setattr("gateway.children._stdio._EXIT_GRACE_SECONDS", 0.2)
    monkeypatch.setattr("gateway.children._stdio._SIGNAL_GRACE_SECONDS", 0.2)
    pid = 0
    with anyio.fail_after(WAIT):
        with anyio.CancelScope() as scope:
            async with spawned(*python(IGNORES_TERM)) as (child, _):
                pid = child.pid
                assert isinstance(await received(child), types.JSONRPCNotification)
                if cancelled:
                    scope.cancel()  # the caller gives up: the stop is shielded and bounded all the same
                    await anyio.sleep(WAIT)
        assert pid
        assert is_gone(pid)


async def test_large_messages_sent_side_by_side_reach_the_child_whole_each_on_its_own_line() -> None:
    # Each message is larger than a pipe's buffer, so every send waits for the child to read.
    size, count = 200_000, 8
    messages = [
        types.JSONRPCRequest(jsonrpc="2.0", id=n, method="ping", params={"pad": str(n) * size})
        for n in range(count)
    ]
    echoed: list[types.JSONRPCMessage] = []
    with anyio.fail_after(WAIT):
        async with spawned(*python(PY_ECHO), cap=4 * size * count) as (child, _):

            async def read_all() -> None:
                for _ in range(count):
                    echoed.append(await received(child))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read_all)
                async with anyio.create_task_group() as senders:
                    for message in messages:
                        senders.start_soon(child.write.send, SessionMessage(message))

    assert sorted(echoed, key=lambda message: int(getattr(message, "id", -1))) == messages


CLOSES_STDIN = (
    "import os, sys, time\nos.close(0)\n"
    'sys.stdout.write(\'{"jsonrpc": "2.0", "method": "ready"}\\n\'); sys.stdout.flush()\ntime.sleep(600)'
)


async def send_until_refused(child: StdioChild, message: types.JSONRPCMessage) -> Exception | None:
    """Send `message` until a send fails (the first write may land before the loop learns the pipe broke)."""
    for _ in range(10):
        try:
            await child.write.send(SessionMessage(message))
        except Exception as exc:
            return exc
        await anyio.sleep(0.05)
    return None


async def test_a_send_to_a_child_whose_stdin_closed_fails_as_a_lost_connection_and_ends_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # This child never exits on its own: a short wait for it before SIGTERM ends the test sooner.
    monkeypatch.setattr("gateway.children._stdio._EXIT_GRACE_SECONDS", 0.2)
    ping = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
    with anyio.fail_after(WAIT):
        async with spawned(*python(CLOSES_STDIN)) as (child, _):
            assert isinstance(await received(child), types.JSONRPCNotification)  # stdin is closed by now
            assert isinstance(await send_until_refused(child, ping), anyio.BrokenResourceError)
            with pytest.raises(anyio.ClosedResourceError):
                await child.write.send(SessionMessage(ping))
            with pytest.raises((anyio.EndOfStream, anyio.ClosedResourceError)):
                await child.read.receive()
