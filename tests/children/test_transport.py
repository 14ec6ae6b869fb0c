"""A child connection's errors described through exception groups, its end reason, and the SDK log filter."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from gateway.children._http_cap import AnswerCap, EventCap
from gateway.children._message_cap import too_large
from gateway.children._transport import (
    ChildConnection,
    QuietSdkParseErrors,
    SpawnFailed,
    describe_error,
    is_connection_lost,
)

pytestmark = pytest.mark.anyio

CLOSED = MCPError(types.CONNECTION_CLOSED, "Connection closed")


def http_error(status: int) -> httpx2.HTTPStatusError:
    request = httpx2.Request("POST", "http://child.test/mcp")
    return httpx2.HTTPStatusError("bad", request=request, response=httpx2.Response(status, request=request))


@pytest.mark.parametrize(
    ("error", "described"),
    [
        (
            SpawnFailed("cannot start 'nope': No such file or directory"),
            "cannot start 'nope': No such file or directory",
        ),
        (CLOSED, "closed the connection"),
        (MCPError(types.METHOD_NOT_FOUND, "Method not found"), "Method not found"),
        (http_error(503), "HTTP 503 from http://child.test/mcp"),
        (ValueError("bad schema"), "ValueError: bad schema"),
        (anyio.EndOfStream(), "EndOfStream"),
    ],
)
def test_each_error_is_described_in_one_short_line(error: Exception, described: str) -> None:
    assert describe_error(error) == described


def test_an_error_is_described_from_inside_nested_exception_groups() -> None:
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [http_error(401)]), ValueError("later")])
    assert describe_error(nested) == "HTTP 401 from http://child.test/mcp"


def test_a_real_error_is_preferred_over_a_base_exception_in_the_same_group() -> None:
    group = BaseExceptionGroup("task group", [KeyboardInterrupt(), OSError("pipe broke")])
    assert describe_error(group) == "OSError: pipe broke"


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (CLOSED, True),
        (anyio.ClosedResourceError(), True),
        (anyio.BrokenResourceError(), True),
        (anyio.EndOfStream(), True),
        (ExceptionGroup("g", [ExceptionGroup("h", [anyio.BrokenResourceError()])]), True),
        (MCPError(types.INTERNAL_ERROR, "boom"), False),
        (ConnectionResetError(), False),
        (ExceptionGroup("g", [ValueError("x"), anyio.EndOfStream()]), False),
    ],
)
def test_only_a_closed_connection_counts_as_lost(error: BaseException, lost: bool) -> None:
    assert is_connection_lost(error) is lost


def test_a_connection_records_only_the_first_reason_it_must_end() -> None:
    pokes: list[None] = []
    connection = ChildConnection("git", lambda: pokes.append(None))
    assert connection.end_reason is None
    connection.end("call timed out", kill=True)
    connection.closed()
    connection.end("another reason")
    assert connection.end_reason == "call timed out"
    assert connection.kill is True
    assert len(pokes) == 1


def test_a_closed_stream_ends_the_connection_as_lost_without_killing_it() -> None:
    connection = ChildConnection("git", lambda: None)
    connection.closed()
    assert connection.end_reason == "connection lost: closed the connection"
    assert connection.kill is False


async def test_an_http_404_for_a_known_session_ends_the_connection_and_other_responses_do_not() -> None:
    connection = ChildConnection("web", lambda: None)
    anonymous = httpx2.Request("POST", "http://child.test/mcp")
    await connection.on_http_response(httpx2.Response(404, request=anonymous))
    with_session = httpx2.Request("POST", "http://child.test/mcp", headers={"mcp-session-id": "abc"})
    await connection.on_http_response(httpx2.Response(500, request=with_session))
    assert connection.end_reason is None
    await connection.on_http_response(httpx2.Response(404, request=with_session))
    assert connection.end_reason == "connection lost: the server no longer knows the session (HTTP 404)"


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("mcp.client.stdio", logging.ERROR, __file__, 1, message, args or None, None)


def test_the_sdk_parse_error_record_is_dropped_and_nothing_else() -> None:
    quiet = QuietSdkParseErrors()
    assert not quiet.filter(record("Failed to parse JSONRPC message from server"))
    assert not quiet.filter(record("Failed to parse %s message from server", "JSONRPC"))
    assert quiet.filter(record("Failed to parse JSONRPC message from server: extra"))
    assert quiet.filter(record("failed to parse jsonrpc message from server"))
    assert quiet.filter(record("Error in stdout_reader"))


def test_the_filter_on_a_logger_keeps_the_sdks_other_records() -> None:
    logger = logging.getLogger("tests.children.quiet_sdk")
    kept: list[str] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record.getMessage())

    recorder = Recorder()
    logger.addHandler(recorder)
    logger.addFilter(QuietSdkParseErrors())
    try:
        try:
            raise ValueError("not json")
        except ValueError:
            logger.exception("Failed to parse JSONRPC message from server")
        logger.error("Error in stdout_reader")
    finally:
        logger.removeHandler(recorder)
    assert kept == ["Error in stdout_reader"]


# ---- the cap on an HTTP child's answers ---------------------------------------------------------

CAP = 1024
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "big", "arguments": {}}}


class Chunks(httpx2.AsyncByteStream):
    """A response body arriving in pieces; counts what was read of it."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.read = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.read += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def answer(body: Chunks, content_type: str, **headers: str) -> httpx2.Response:
    request = httpx2.Request("POST", "http://child.test/mcp", json=CALL)
    return httpx2.Response(
        200, headers={"content-type": content_type, **headers}, stream=body, request=request
    )


async def capped(response: httpx2.Response, cap: int = CAP) -> bytes:
    await AnswerCap("web", cap).on_response(response)
    with anyio.fail_after(10):
        return await response.aread()


def error_message(body: bytes) -> str:
    message = json.loads(body)
    assert message["id"] == 7
    return message["error"]["message"]


async def test_every_request_asks_for_an_uncompressed_answer() -> None:
    request = httpx2.Request("POST", "http://child.test/mcp", json=CALL, headers={"accept-encoding": "gzip"})
    await AnswerCap("web", CAP).on_request(request)
    assert request.headers["accept-encoding"] == "identity"


async def test_a_json_answer_within_the_cap_passes_whole() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"x": "y" * 900}}).encode()
    assert await capped(answer(Chunks(body[:500], body[500:]), "application/json")) == body


async def test_a_json_answer_whose_length_is_past_the_cap_is_refused_unread_naming_its_size() -> None:
    body = Chunks(b"x" * 5000)
    reply = await capped(answer(body, "application/json", **{"content-length": "5000"}))
    assert error_message(reply) == too_large(5000, CAP)
    assert body.read == 0
    assert body.closed


async def test_a_json_answer_past_the_cap_of_unknown_length_is_read_no_further_than_the_cap() -> None:
    body = Chunks(*[b"x" * 600] * 1000)
    reply = await capped(answer(body, "application/json; charset=utf-8"))
    assert error_message(reply) == too_large(None, CAP)
    assert body.read == 1200
    assert body.closed


async def test_a_compressed_answer_is_refused_naming_its_encoding() -> None:
    response = answer(Chunks(gzip.compress(b"{}")), "application/json", **{"content-encoding": "gzip"})
    message = error_message(await capped(response))
    assert message.startswith("the child compressed its answer (Content-Encoding: gzip) although the gateway")
    assert "max_message_bytes" in message


def sse(*events: bytes) -> bytes:
    return b"".join(events)


def event(message: dict[str, Any], event_id: str = "") -> bytes:
    return (
        (f"id: {event_id}\n" if event_id else "").encode()
        + b"data: "
        + json.dumps(message).encode()
        + b"\n\n"
    )


def fed_events(cap: EventCap, data: bytes, piece: int) -> bytes:
    return b"".join(cap.feed(data[at : at + piece]) for at in range(0, len(data), piece)) + cap.end()


def data_of(stream: bytes) -> list[Any]:
    return [json.loads(line[6:]) for line in stream.split(b"\n") if line.startswith(b"data: ")]


@pytest.mark.parametrize("piece", [1, 5, 100, 1 << 20])
def test_events_within_the_cap_pass_with_their_comments_and_line_ends_made_lf(piece: int) -> None:
    stream = (
        b': keep-alive\r\n\r\nevent: message\r\nid: 1\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: 2\rdata: {}\r\r'
    )
    out = fed_events(EventCap(CAP), stream, piece)
    assert out == stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


@pytest.mark.parametrize("piece", [1, 999, 4096, 1 << 20])
def test_an_event_past_the_cap_becomes_an_error_event_for_its_id_and_the_next_event_passes(
    piece: int,
) -> None:
    big = {"result": {"text": "r" * 20_000}, "jsonrpc": "2.0", "id": 3}  # the id last, as Node writes it
    after = {"jsonrpc": "2.0", "id": 4, "result": {}}
    cap = EventCap(CAP)
    out = fed_events(cap, sse(event(big, "e-1"), event(after, "e-2")), piece)
    stand_in, passed = data_of(out)
    assert stand_in["id"] == 3
    assert stand_in["error"]["message"] == too_large(len(event(big, "e-1")) - 1, CAP)
    assert passed == after
    assert out.startswith(b"event: message\nid: e-1\ndata: ")  # the stand-in keeps the event's id
    assert cap.dropped == []


def test_an_oversized_notification_event_is_dropped_and_an_unknown_one_answers_the_request() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * 5000}}
    cap = EventCap(CAP, request_id=7)
    assert cap.feed(event(note)) == b""
    [dropped] = cap.dropped
    assert dropped.startswith("dropped a message (notification) of ")
    [stand_in] = data_of(cap.feed(b"data: " + b"?" * 5000 + b"\n\n"))
    assert (stand_in["id"], stand_in["error"]["message"]) == (7, too_large(5007, CAP))


async def test_an_event_stream_answer_is_capped_event_by_event() -> None:
    big = {"jsonrpc": "2.0", "id": 7, "result": {"text": "r" * 5000}}
    small = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    stream = sse(event(small), event(big))
    out = await capped(answer(Chunks(stream[:3000], stream[3000:]), "text/event-stream"))
    passed, stand_in = data_of(out)
    assert passed == small
    assert error_message(json.dumps(stand_in).encode()) == too_large(len(event(big)) - 1, CAP)
