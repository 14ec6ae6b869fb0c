"""What an HTTP child's responses may hold: each message capped as it is read, as a stdio child's are.

A streamable HTTP child answers a request with one JSON body or with a stream of server-sent events
(so do its GET stream and every message of a legacy SSE child). `AnswerCap`'s response hook swaps
each response's byte stream for one that passes on at most the cap per message: a JSON body is held
until it ends (the SDK reads it whole anyway), and one past the cap is not read any further; an event
past the cap is dropped as it streams, in bounded memory. A JSON-RPC error for the request takes the
place of an oversized answer (`error_reply`), so the call fails at once, naming the size and the
cap, and the session serves on. The gateway asks for uncompressed answers, since a compressed one
could not be bounded as it is read; one compressed anyway is refused the same way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import httpx2

from gateway.children._message_cap import ANSWER_TOO_LARGE_CODE, EDGE_BYTES, error_reply, message_kind
from gateway.shared import as_object

__all__ = ["LEGACY_SSE_EVENT_BYTES", "AnswerCap", "EventCap"]

log = logging.getLogger("gateway.children")

LEGACY_SSE_EVENT_BYTES = 1024 * 1024
"""The SDK's own cap on one event of a legacy SSE child, which its `sse_client` does not let us raise."""
_SDK_EVENT_HEADROOM = 4096  # the SDK's cap sits above ours, so that only ours ever refuses


def _request_id(request: httpx2.Request) -> object:
    """The JSON-RPC id of the request a response answers, or None (a notification, a GET)."""
    if request.method != "POST":
        return None
    try:
        message: object = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    fields = as_object(message)
    return fields.get("id") if fields is not None and "method" in fields else None


def _stand_in(size: int | None, cap: int, request_id: object) -> bytes:
    return error_reply(b"", b"", size, cap, fallback_id=request_id) or b""


class _CappedBody(httpx2.AsyncByteStream):
    """A whole body, passed on only if it is within the cap; else the stand-in for its request."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, cap: int, request_id: object, length: int | None
    ) -> None:
        self._inner = inner
        self._cap = cap
        self._request_id = request_id
        self._length = length

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._length is not None and self._length > self._cap:
            yield _stand_in(self._length, self._cap, self._request_id)  # refused unread
            return
        chunks: list[bytes] = []
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._cap:
                yield _stand_in(None, self._cap, self._request_id)  # the rest is never read
                return
            chunks.append(chunk)
        for chunk in chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Refused(httpx2.AsyncByteStream):
    """A body the gateway cannot bound (compressed although it asked for none): an error instead."""

    def __init__(self, inner: httpx2.AsyncByteStream, body: bytes) -> None:
        self._inner = inner
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body

    async def aclose(self) -> None:
        await self._inner.aclose()


def _data_lines(raw: bytes, *, continued: bool) -> bytes:
    """The `data:` payload of some lines of an event; `continued`: the first line is a data line's end."""
    lines = raw.split(b"\n")
    pieces: list[bytes] = []
    for at, line in enumerate(lines):
        if line.startswith(b"data:"):
            pieces.append(line[6:] if line.startswith(b"data: ") else line[5:])
        elif at == 0 and continued and line:
            pieces.append(line)
    return b"\n".join(pieces)


def _field(raw: bytes, name: bytes) -> bytes | None:
    """The last whole `name:` line among `raw`'s lines (with its newline), or None."""
    found = None
    for line in raw.split(b"\n")[:-1]:
        if line.startswith(name + b":"):
            found = line + b"\n"
    return found


class EventCap:
    """Splits a server-sent-events byte stream into events, passing on those within `cap` bytes.

    An event past the cap is dropped as it streams, keeping its first and last EDGE_BYTES: when they
    show a response (or, failing that, `request_id` is known), an error event for it takes its place.
    What is dropped without a stand-in is described in `dropped`, for the caller to report (and clear).
    """

    def __init__(self, cap: int, request_id: object = None) -> None:
        self.cap = cap
        self.dropped: list[str] = []
        self._request_id = request_id
        self._event = bytearray()  # the pending event, while within the cap
        self._over = -1  # the size of the pending event once past the cap, else -1
        self._head = b""
        self._tail = b""
        self._open = False  # a line is under way
        self._cr = False  # the last feed ended with "\r", which a "\n" may follow

    def feed(self, data: bytes) -> bytes:
        """What to pass on after `data`: every event it completes (or its stand-in), lines ending in LF."""
        if self._cr:
            data = b"\r" + data
        self._cr = data.endswith(b"\r")
        if self._cr:
            data = data[:-1]
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        out: list[bytes] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if end == start and not self._open:
                out.append(self._finish())  # a blank line ends the event
            else:
                self._add(data[start : end + 1])
            self._open = False
            start = end + 1
        if start < len(data):
            self._add(data[start:])
            self._open = True
        return b"".join(out)

    def end(self) -> bytes:
        """What to pass on at the end of the stream: an unfinished event, as it was."""
        tail = self.feed(b"\n") if self._cr else b""
        if self._over >= 0:
            self.dropped.append(
                f"dropped an unfinished event of {self._over} bytes, over the {self.cap}-byte cap"
            )
            self._over = -1
            return tail
        event, self._event = bytes(self._event), bytearray()
        return tail + event

    def _add(self, piece: bytes) -> None:
        if self._over >= 0:
            self._over += len(piece)
            self._tail = (self._tail + piece[-EDGE_BYTES:])[-EDGE_BYTES:]
        elif len(self._event) + len(piece) > self.cap:
            self._over = len(self._event) + len(piece)
            self._head = (bytes(self._event[:EDGE_BYTES]) + piece[:EDGE_BYTES])[:EDGE_BYTES]
            self._tail = (bytes(self._event[-EDGE_BYTES:]) + piece[-EDGE_BYTES:])[-EDGE_BYTES:]
            self._event = bytearray()
        else:
            self._event += piece

    def _finish(self) -> bytes:
        if self._over < 0:
            event, self._event = bytes(self._event), bytearray()
            return event + b"\n"
        size, self._over = self._over, -1
        head = _data_lines(self._head, continued=False)
        tail = _data_lines(self._tail, continued=True)
        reply = error_reply(head, tail, size, self.cap, fallback_id=self._request_id)
        if reply is None:
            kind, _ = message_kind(head, tail)
            self.dropped.append(
                f"dropped a message ({kind}) of {size} bytes, "
                f"over the {self.cap}-byte cap (max_message_bytes)"
            )
            return b""
        event_id = _field(self._head, b"id") or _field(self._tail, b"id") or b""
        return b"event: message\n" + event_id + b"data: " + reply + b"\n\n"


class _CappedEvents(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, events: EventCap, child: str) -> None:
        self._inner = inner
        self._events = events
        self._child = child

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            out = self._events.feed(chunk)
            self._report()
            if out:
                yield out
        out = self._events.end()
        self._report()
        if out:
            yield out

    def _report(self) -> None:
        for text in self._events.dropped:
            log.warning("child message dropped", extra={"child": self._child, "detail": text})
        self._events.dropped.clear()

    async def aclose(self) -> None:
        await self._inner.aclose()


class AnswerCap:
    """HTTP event hooks capping every message a child's responses hold at `cap` bytes."""

    def __init__(self, child: str, cap: int) -> None:
        self.child = child
        self.cap = cap

    @property
    def sdk_event_limit(self) -> int:
        """The SDK's own per-event cap to set: above ours, which refuses first with a clear error."""
        return self.cap + _SDK_EVENT_HEADROOM

    async def on_request(self, request: httpx2.Request) -> None:
        request.headers["accept-encoding"] = "identity"  # a compressed size says nothing of the real one

    async def on_response(self, response: httpx2.Response) -> None:
        inner = response.stream
        if not isinstance(inner, httpx2.AsyncByteStream):
            return
        headers = response.headers
        request_id = _request_id(response.request)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        length = headers.get("content-length", "")
        if "content-length" in headers:
            del headers["content-length"]  # what is passed on may differ
        if encoding != "identity":
            del headers["content-encoding"]
            message = (
                f"the child compressed its answer (Content-Encoding: {encoding}) although the gateway asked "
                "for none, so its size cannot be capped as it is read (max_message_bytes)"
            )
            body = _refusal(message, request_id)
            if content_type == "text/event-stream":
                body = b"event: message\ndata: " + body + b"\n\n" if body else b""
            response.stream = _Refused(inner, body)
        elif content_type == "text/event-stream":
            response.stream = _CappedEvents(inner, EventCap(self.cap, request_id), self.child)
        else:
            size = int(length) if length.isdigit() else None
            response.stream = _CappedBody(inner, self.cap, request_id, size)

    def client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """A client with these hooks (an `httpx_client_factory` for the SDK's legacy SSE client)."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
            auth=auth,
            event_hooks={"request": [self.on_request], "response": [self.on_response]},
        )


def _refusal(message: str, request_id: object) -> bytes:
    if request_id is None:
        return b""
    error = {"code": ANSWER_TOO_LARGE_CODE, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
