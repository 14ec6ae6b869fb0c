"""The relay between a stdio child's stdout and the SDK: lines passed on, oversized ones stood in for.

The message analysis and the line splitting are tested as functions; the relay itself as the real
process the gateway starts (`python -I -S _relay.py ... -- command`), in front of small commands.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.children._relay import (
    ANSWER_TOO_LARGE_CODE,
    EDGE_BYTES,
    SPAWN_FAILED,
    LineCap,
    error_reply,
    message_kind,
    relay_command,
    too_large,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="the relay runs on POSIX only"),
]

WAIT = 30  # bounds a hang; each wait below ends on the relay's output long before it
CAP = 1024


def response(message_id: object, size: int, *, id_last: bool = False) -> bytes:
    """A JSON-RPC response whose result holds `size` characters, its id first (Python) or last (Node)."""
    result = {"content": [{"type": "text", "text": "r" * size}]}
    if id_last:
        return json.dumps({"result": result, "jsonrpc": "2.0", "id": message_id}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode()


def notification(size: int) -> bytes:
    params = {"level": "info", "data": "n" * size}
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params}).encode()


def edges(message: bytes) -> tuple[bytes, bytes]:
    return message[:EDGE_BYTES], message[-EDGE_BYTES:]


def fed(cap: LineCap, data: bytes, piece: int) -> bytes:
    """What `cap` passes on when `data` arrives `piece` bytes at a time, then ends."""
    out = [cap.feed(data[at : at + piece]) for at in range(0, len(data), piece)]
    return b"".join(out) + cap.end()


# ---- what an oversized message was --------------------------------------------------------------


@pytest.mark.parametrize("message_id", [7, "req-7", 0])
@pytest.mark.parametrize("id_last", [False, True])
def test_a_response_is_recognised_with_its_id_before_or_after_the_result(
    message_id: object, id_last: bool
) -> None:
    assert message_kind(*edges(response(message_id, 100_000, id_last=id_last))) == ("response", message_id)


def test_an_id_nested_in_the_result_is_not_taken_for_the_responses_own() -> None:
    nested = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"items": [{"id": 99}], "pad": "x" * 99_999}})
    assert message_kind(*edges(nested.encode())) == ("response", 3)
    last = json.dumps({"result": {"pad": "x" * 99_999, "item": {"id": 99}}, "jsonrpc": "2.0", "id": 4})
    assert message_kind(*edges(last.encode())) == ("response", 4)


def test_notifications_requests_and_garbage_are_told_apart_from_responses() -> None:
    assert message_kind(*edges(notification(100_000))) == ("notification", None)
    request = json.dumps(
        {"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": "x" * 9999}
    )
    assert message_kind(*edges(request.encode())) == ("request", 5)
    assert message_kind(b"x" * EDGE_BYTES, b"y" * EDGE_BYTES) == ("unknown", None)
    assert message_kind(b'{"result": "xxxx', b"xxxx no id here") == ("unknown", None)


def test_the_stand_in_is_an_error_response_for_the_id_naming_size_cap_and_key() -> None:
    reply = error_reply(*edges(response(12, 100_000)), 100_123, CAP)
    assert reply is not None
    message = json.loads(reply)
    assert message["id"] == 12
    assert message["error"]["code"] == ANSWER_TOO_LARGE_CODE
    assert message["error"]["message"] == too_large(100_123, CAP)
    assert "100123 bytes, over the 1024-byte cap" in message["error"]["message"]
    assert "(max_message_bytes)" in message["error"]["message"]
    assert error_reply(*edges(notification(100_000)), 100_100, CAP) is None


def test_an_answer_of_unknown_size_is_named_as_more_than_the_cap() -> None:
    assert too_large(None, CAP).startswith(
        "the child's answer is more than 1024 bytes, over the 1024-byte cap"
    )


# ---- the line splitting -------------------------------------------------------------------------


@pytest.mark.parametrize("piece", [1, 7, 1024, 1 << 20])
def test_lines_within_the_cap_pass_unchanged_however_the_reads_split_them(piece: int) -> None:
    lines = b'{"a": 1}\n' + b"x" * CAP + b"\n\n" + response(1, 500) + b"\nno newline at the end"
    assert fed(LineCap(CAP), lines, piece) == lines


def test_a_line_completed_by_a_read_as_long_as_it_keeps_the_rest_of_that_read_pending() -> None:
    cap = LineCap(CAP)
    assert cap.feed(b"xy") == b""
    assert cap.feed(b"z\nQQ") == b"xyz\n"
    assert cap.end() == b"QQ"


@pytest.mark.parametrize("piece", [1, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("id_last", [False, True])
def test_a_line_past_the_cap_becomes_the_error_for_its_id_and_the_next_line_passes(
    piece: int, id_last: bool
) -> None:
    big = response(9, 50_000, id_last=id_last)
    cap = LineCap(CAP)
    out = fed(cap, b"before\n" + big + b"\nafter\n", piece)
    before, stand_in, after, end = out.split(b"\n")
    assert (before, after, end) == (b"before", b"after", b"")
    assert json.loads(stand_in) == json.loads(error_reply(*edges(big), len(big), CAP) or b"null")
    assert cap.dropped == []


def test_a_line_just_past_the_cap_is_stood_in_for_and_one_at_the_cap_passes() -> None:
    at_cap = response(1, 0)
    cap = LineCap(len(at_cap))
    assert cap.feed(at_cap + b"\n") == at_cap + b"\n"
    past = response(2, 1)
    assert json.loads(cap.feed(past + b"\n"))["error"]["message"] == too_large(len(past), len(at_cap))


def test_an_oversized_notification_is_dropped_and_described() -> None:
    cap = LineCap(CAP)
    assert fed(cap, notification(10_000) + b"\n" + b"next\n", 999) == b"next\n"
    [dropped] = cap.dropped
    size = len(notification(10_000))
    assert (
        dropped
        == f"dropped a message (notification) of {size} bytes, over the 1024-byte cap (max_message_bytes)"
    )


def test_an_oversized_line_left_unfinished_at_the_end_is_dropped() -> None:
    cap = LineCap(CAP)
    assert fed(cap, b"ok\n" + b"z" * 5000, 100) == b"ok\n"
    [dropped] = cap.dropped
    assert dropped.startswith("dropped an unfinished message of 5000 bytes")


# ---- the relay process --------------------------------------------------------------------------


@asynccontextmanager
async def relayed(*command: str, cap: int = CAP, env: dict[str, str] | None = None) -> AsyncIterator[Process]:
    """The relay in front of `command`, as the gateway starts it."""
    environment = dict(os.environ if env is None else env)
    executable, args = relay_command(command[0], list(command[1:]), cap, environment)
    process = await anyio.open_process(
        [executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        start_new_session=True,  # as the SDK starts it: the relay leads its child's process group
    )
    async with process:
        try:
            yield process
        finally:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # whatever the test left running


async def read_all(process: Process) -> tuple[bytes, bytes]:
    """Everything the process writes to stdout and stderr, until it exits."""
    assert process.stdout is not None
    assert process.stderr is not None
    out, err = bytearray(), bytearray()

    async def drain(stream: Any, into: bytearray) -> None:
        async for chunk in stream:
            into.extend(chunk)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(drain, process.stdout, out)
        task_group.start_soon(drain, process.stderr, err)
    await process.wait()
    return bytes(out), bytes(err)


PY_ECHO = (
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()"
)


async def test_the_relay_passes_each_line_on_as_the_child_writes_it_and_stands_in_for_one_past_the_cap() -> (
    None
):
    big = response(41, 20_000, id_last=True)
    with anyio.fail_after(WAIT):
        async with relayed(sys.executable, "-c", PY_ECHO) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            lines = BufferedByteReceiveStream(process.stdout)
            await process.stdin.send(b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
            assert await lines.receive_until(b"\n", CAP) == b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
            await process.stdin.send(big + b"\n")
            stand_in = json.loads(await lines.receive_until(b"\n", CAP))
            assert stand_in["id"] == 41
            assert stand_in["error"]["message"] == too_large(len(big), CAP)
            await process.stdin.send(b"still relayed\n")
            assert await lines.receive_until(b"\n", CAP) == b"still relayed"
            await process.stdin.aclose()  # the child ends on its stdin's end, and the relay with it
            assert await process.wait() == 0


async def test_an_oversized_notification_is_dropped_with_a_line_on_stderr() -> None:
    script = f"import sys\nsys.stdout.buffer.write({notification(5000)!r} + b'\\n' + b'after\\n')"
    with anyio.fail_after(WAIT):
        async with relayed(sys.executable, "-c", script) as process:
            out, err = await read_all(process)
    assert out == b"after\n"
    size = len(notification(5000))
    assert err.decode() == (
        f"codemode-gateway relay: dropped a message (notification) of {size} bytes, "
        "over the 1024-byte cap (max_message_bytes)\n"
    )


async def test_a_command_that_cannot_be_started_is_reported_on_stderr_with_status_127() -> None:
    with anyio.fail_after(WAIT):
        async with relayed("/nonexistent/codemode-no-such-server") as process:
            out, err = await read_all(process)
    assert out == b""
    assert (
        err.decode() == f"{SPAWN_FAILED}'/nonexistent/codemode-no-such-server': No such file or directory\n"
    )
    assert process.returncode == 127


@pytest.mark.parametrize(("script", "status"), [("exit 3", 3), ("kill -TERM $$", 128 + 15)])
async def test_the_relay_exits_with_the_childs_status(script: str, status: int) -> None:
    with anyio.fail_after(WAIT):
        async with relayed("sh", "-c", script) as process:
            await read_all(process)
    assert process.returncode == status


async def test_the_child_gets_the_environment_stdin_and_stderr_the_relay_was_given() -> None:
    script = "import sys\nsys.stderr.write(sys.stdin.read())"
    base = {"PATH": os.environ["PATH"], "ENTRY_VAR": "from the entry"}
    for env in (base, {**base, "LC_CTYPE": "C"}):
        with anyio.fail_after(WAIT):
            async with relayed("env", env=env) as process:
                assert process.stdin is not None
                await process.stdin.aclose()
                out, _ = await read_all(process)
        # Python coerces a C locale by setting LC_CTYPE; the relay undoes that for its child.
        assert sorted(out.decode().splitlines()) == sorted(f"{key}={value}" for key, value in env.items())
    with anyio.fail_after(WAIT):
        async with relayed(sys.executable, "-c", script) as process:
            assert process.stdin is not None
            await process.stdin.send(b"to stdin, back on stderr")
            await process.stdin.aclose()
            _, err = await read_all(process)
    assert err == b"to stdin, back on stderr"


def peak_memory_kib(pid: int) -> int:
    """A live process's peak resident memory (VmHWM: its own, since its exec)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_the_relay_keeps_bounded_memory_for_a_line_of_200_mb() -> None:
    # The child keeps its stdout open after the line, so that the relay is still there to measure.
    script = "head -c 200000000 /dev/zero | tr '\\0' x; echo; echo done; exec sleep 600"
    with anyio.fail_after(WAIT):
        async with relayed("sh", "-c", script) as process:
            assert process.stdout is not None
            lines = BufferedByteReceiveStream(process.stdout)
            assert await lines.receive_until(b"\n", CAP) == b"done"
            peak = peak_memory_kib(process.pid)
    assert peak < 32 * 1024, f"the relay's peak RSS was {peak // 1024} MiB"
