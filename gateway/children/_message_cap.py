"""What a child's message may hold: a stdio child's lines capped as they are read, and what an
oversized message was.

The gateway reads a stdio child's stdout itself (`_stdio`): `LineCap` splits it into lines in
linear time and bounded memory. A line past the cap is read and dropped, keeping only its first and
last EDGE_BYTES; if they show a JSON-RPC response, an error response for that id (`error_reply`)
takes its place, so the waiting call fails at once, naming the size and the cap. Anything else past
the cap is dropped and described, for the caller to log. The same message analysis caps the answers
of HTTP children (`_http_cap`).
"""

from __future__ import annotations

import json
import re

__all__ = [
    "ANSWER_TOO_LARGE_CODE",
    "EDGE_BYTES",
    "LineCap",
    "error_reply",
    "message_kind",
    "too_large",
]

ANSWER_TOO_LARGE_CODE = -32603  # JSON-RPC "internal error": the child's answer cannot be delivered
EDGE_BYTES = 4096  # of an oversized message's head and tail, kept to find out what it was
_ID_LAST = re.compile(
    r'[,{]\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)


def too_large(size: int | None, cap: int) -> str:
    """The error a call gets for an answer past the cap (its size, if known)."""
    amount = f"{size} bytes" if size is not None else f"more than {cap} bytes"
    return (
        f"the child's answer is {amount}, over the {cap}-byte cap on a child's message "
        "(max_message_bytes); ask the tool for less (filters, pagination)"
    )


# ---- what an oversized message was ---------------------------------------------------------------


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _leading_members(text: str) -> tuple[dict[str, object], str | None]:
    """The whole top-level members at the start of a JSON object's text, and the key whose value is cut."""
    decoder = json.JSONDecoder()
    members: dict[str, object] = {}
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        return members, None
    at += 1
    while True:
        at = _skip_space(text, at)
        try:
            key, at = decoder.raw_decode(text, at)
        except ValueError:
            return members, None
        at = _skip_space(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            return members, None
        at = _skip_space(text, at + 1)
        try:
            members[key], at = decoder.raw_decode(text, at)
        except ValueError:
            return members, key
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            return members, None
        at += 1


def message_kind(head: bytes, tail: bytes) -> tuple[str, object]:
    """What a message too large to parse is, from its first and last bytes, and its id (or None).

    "response" (with its id), "request", "notification" or "unknown". The Python SDK writes the id
    before the result, the TypeScript SDK after it (`{"result": ..., "jsonrpc": "2.0", "id": 7}`),
    so the id is looked for in the head, then as the last member of the tail.
    """
    members, cut = _leading_members(head.decode("utf-8", "replace"))
    if "method" in members:
        return ("request" if "id" in members else "notification"), members.get("id")
    if cut not in ("result", "error") and not {"result", "error"} & set(members):
        return "unknown", None
    if isinstance(members.get("id"), int | str):
        return "response", members["id"]
    last = _ID_LAST.search(tail.decode("utf-8", "replace"))
    if last is None:
        return "unknown", None
    return "response", json.loads(last.group(1))


def error_reply(
    head: bytes, tail: bytes, size: int | None, cap: int, fallback_id: object = None
) -> bytes | None:
    """A JSON-RPC error response standing in for an oversized response, or None if it is not one.

    `fallback_id` is the id to answer when the message cannot be told apart (an HTTP response to a
    known request); a notification or a request from the child is never answered.
    """
    kind, message_id = message_kind(head, tail)
    if kind == "unknown" and fallback_id is not None:
        kind, message_id = "response", fallback_id
    if kind != "response":
        return None
    error = {"code": ANSWER_TOO_LARGE_CODE, "message": too_large(size, cap)}
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error}).encode()


# ---- the line splitting --------------------------------------------------------------------------


class LineCap:
    """Splits a byte stream into lines, passing on those within `cap` bytes and standing in for the rest.

    Memory stays within the cap plus a read and each byte is searched once: a line past the cap is
    counted and dropped, keeping only its first and last EDGE_BYTES, from which `error_reply` makes
    its stand-in. What is dropped without a stand-in is described in `dropped`, for the caller to
    report (and clear).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.dropped: list[str] = []
        self._line = bytearray()  # the pending line, while within the cap
        self._over = -1  # the size of the pending line once past the cap, else -1
        self._head = b""
        self._tail = b""

    def feed(self, data: bytes) -> list[bytes]:
        """The lines `data` completes, without their newlines; one past the cap as its stand-in, if any."""
        lines: list[bytes] = []
        view = memoryview(data)
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not self._line and self._over < 0 and end - start <= self.cap:
                lines.append(data[start:end])  # the usual case: a whole line in one read
            else:
                self._add(view[start:end])
                if (line := self._finish()) is not None:
                    lines.append(line)
            start = end + 1
        if start < len(data):
            self._add(view[start:])
        return lines

    def end(self) -> None:
        """The stream ended: an unfinished line is dropped (as the SDK drops one), described if too long."""
        if self._over >= 0:
            self.dropped.append(
                f"dropped an unfinished message of {self._over} bytes, over the {self.cap}-byte cap "
                "(max_message_bytes)"
            )
        self._line, self._over = bytearray(), -1

    def _add(self, piece: memoryview) -> None:
        if self._over >= 0:
            self._over += len(piece)
            self._tail = (self._tail + piece[-EDGE_BYTES:].tobytes())[-EDGE_BYTES:]
        elif len(self._line) + len(piece) > self.cap:
            self._over = len(self._line) + len(piece)
            self._head = (bytes(self._line[:EDGE_BYTES]) + piece[:EDGE_BYTES].tobytes())[:EDGE_BYTES]
            self._tail = (bytes(self._line[-EDGE_BYTES:]) + piece[-EDGE_BYTES:].tobytes())[-EDGE_BYTES:]
            self._line = bytearray()
        else:
            self._line += piece

    def _finish(self) -> bytes | None:
        if self._over < 0:
            line, self._line = bytes(self._line), bytearray()
            return line
        size, self._over = self._over, -1
        reply = error_reply(self._head, self._tail, size, self.cap)
        if reply is None:
            kind, _ = message_kind(self._head, self._tail)
            self.dropped.append(
                f"dropped a message ({kind}) of {size} bytes, "
                f"over the {self.cap}-byte cap (max_message_bytes)"
            )
        return reply
