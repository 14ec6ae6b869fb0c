"""HTTP refusals: a status, and a short JSON-RPC error naming the limit and its config key.

The body is a JSON-RPC error with `id: null`, so an SDK client that gets it surfaces the message as
the request's error (the Python SDK reads a JSON-RPC error from any non-2xx answer); `error.data`
names the config key and its value for programs, and `Retry-After` says when a busy gateway may have
room again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, ErrorData, JSONRPCError
from starlette.types import Message, Send

__all__ = ["RETRY_AFTER_SECONDS", "Refusal", "Reworded", "send_refusal"]

RETRY_AFTER_SECONDS = 2
"""What a busy answer suggests: a call in flight usually ends within seconds."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not served, as the HTTP answer says it."""

    status: int
    message: str
    key: str | None = None  # the config key of the limit, `http.max_sessions`
    value: object = None  # its value in this gateway's config
    retry_after: int | None = None

    @property
    def code(self) -> int:
        """The JSON-RPC error code: a busy gateway is the server's condition, the rest the request's."""
        return INTERNAL_ERROR if self.retry_after is not None else INVALID_REQUEST

    def body(self) -> bytes:
        data: dict[str, object] | None = None
        if self.key is not None:
            data = {"key": self.key} if self.value is None else {"key": self.key, "value": self.value}
        error = JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=self.code, message=self.message, data=data)
        )
        return error.model_dump_json(by_alias=True, exclude_unset=True).encode()

    def headers(self, length: int) -> list[tuple[bytes, bytes]]:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]
        if self.retry_after is not None:
            headers.append((b"retry-after", str(self.retry_after).encode()))
        return headers


async def send_refusal(send: Send, refusal: Refusal) -> None:
    """Answer the request with `refusal`."""
    body = refusal.body()
    await send(
        {"type": "http.response.start", "status": refusal.status, "headers": refusal.headers(len(body))}
    )
    await send({"type": "http.response.body", "body": body})


class Reworded:
    """A `send` that replaces an answer of the SDK's, chosen by its status, with a `Refusal`.

    For the refusals the SDK's transport makes by itself (a session past `max_sessions`, an unknown or
    expired session): the SDK decides, the gateway says which of its config keys was involved.
    """

    def __init__(self, send: Send, reword: Callable[[int], Refusal | None]) -> None:
        self._send = send
        self._reword = reword
        self._replaced = False
        self.refusal: Refusal | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.refusal = self._reword(message["status"])
            if self.refusal is not None:
                self._replaced = True
                await send_refusal(self._send, self.refusal)
                return
        elif self._replaced and message["type"] == "http.response.body":
            return  # the SDK's own body: already answered
        await self._send(message)
