"""A child connection's errors described through exception groups, its end reason, and the SDK log filter."""

from __future__ import annotations

import logging

import anyio
import httpx2
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

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
