"""What a child's message may hold: the analysis of an oversized message, and a stdio child's lines
split with a cap (the reader in front of real processes is tested in `test_stdio`)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from gateway.children._message_cap import (
    ANSWER_TOO_LARGE_CODE,
    EDGE_BYTES,
    LineCap,
    error_reply,
    message_kind,
    too_large,
)

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


def fed(cap: LineCap, data: bytes, piece: int) -> list[bytes]:
    """The lines `cap` passes on when `data` arrives `piece` bytes at a time, then ends."""
    lines = [line for at in range(0, len(data), piece) for line in cap.feed(data[at : at + piece])]
    cap.end()
    return lines


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
    lines = [b'{"a": 1}', b"x" * CAP, b"", response(1, 500)]
    cap = LineCap(CAP)
    assert fed(cap, b"\n".join(lines) + b"\nno newline at the end", piece) == lines
    assert cap.dropped == []  # an unfinished line within the cap is dropped quietly, as the SDK drops it


def test_a_line_completed_by_a_later_read_keeps_the_rest_of_that_read_pending() -> None:
    cap = LineCap(CAP)
    assert cap.feed(b"xy") == []
    assert cap.feed(b"z\nQQ") == [b"xyz"]
    assert cap.feed(b"\n") == [b"QQ"]


@pytest.mark.parametrize("piece", [1, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("id_last", [False, True])
def test_a_line_past_the_cap_becomes_the_error_for_its_id_and_the_next_line_passes(
    piece: int, id_last: bool
) -> None:
    big = response(9, 50_000, id_last=id_last)
    cap = LineCap(CAP)
    before, stand_in, after = fed(cap, b"before\n" + big + b"\nafter\n", piece)
    assert (before, after) == (b"before", b"after")
    assert json.loads(stand_in) == json.loads(error_reply(*edges(big), len(big), CAP) or b"null")
    assert cap.dropped == []


@pytest.mark.parametrize("piece", [1, 100, 1 << 20])
def test_a_line_at_the_cap_passes_and_one_a_byte_past_it_is_stood_in_for(piece: int) -> None:
    at_cap = response(1, 0)
    past = response(2, 1)
    assert len(past) == len(at_cap) + 1
    cap = LineCap(len(at_cap))
    passed, stand_in = fed(cap, at_cap + b"\n" + past + b"\n", piece)
    assert passed == at_cap
    assert json.loads(stand_in)["error"]["message"] == too_large(len(past), len(at_cap))


def test_an_oversized_notification_is_dropped_and_described() -> None:
    cap = LineCap(CAP)
    assert fed(cap, notification(10_000) + b"\n" + b"next\n", 999) == [b"next"]
    [dropped] = cap.dropped
    size = len(notification(10_000))
    assert (
        dropped
        == f"dropped a message (notification) of {size} bytes, over the 1024-byte cap (max_message_bytes)"
    )


def test_an_oversized_line_left_unfinished_at_the_end_is_dropped() -> None:
    cap = LineCap(CAP)
    assert fed(cap, b"ok\n" + b"z" * 5000, 100) == [b"ok"]
    [dropped] = cap.dropped
    assert dropped.startswith("dropped an unfinished message of 5000 bytes")


def test_a_line_of_64_mib_is_split_within_the_cap_and_a_read_of_memory() -> None:
    read = b"x" * (64 * 1024)
    cap = LineCap(CAP)
    tracemalloc.start()
    try:
        for _ in range(1024):
            assert cap.feed(read) == []
        assert cap.feed(b"\nafter\n") == [b"after"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < CAP + 4 * EDGE_BYTES + 64 * 1024, f"{peak} bytes at the peak"
    assert cap.dropped == [
        f"dropped a message (unknown) of {64 * 1024 * 1024} bytes, over the 1024-byte cap (max_message_bytes)"
    ]
