"""HTTP connections before the app sees a request: how many per client address, and how long a
request's head and body may take to arrive.

uvicorn's HTTP/1.1 protocol waits for a request's head and body as long as the client likes, and
accepts connections until the process runs out of descriptors. `guarded_protocol` is that protocol
with three bounds: a connection past `http.max_connections_per_address` is closed as soon as it is
accepted; one whose head has not arrived within `http.header_timeout_seconds` (from its start, or
from the previous answer's end) is closed; a request whose body has not arrived within
`http.body_timeout_seconds` of its head is answered 408 and its connection closed, so the app's read
ends as at a disconnect and frees what it held. The deadlines run on h11's view of the client
(waiting for a head, sending a body): a trickle of bytes does not extend them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from http import HTTPStatus
from typing import Any, ClassVar, Literal

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from gateway.config.server import HttpConfig
from gateway.server._refusals import Refusal

__all__ = ["AddressCounts", "guarded_protocol"]

log = logging.getLogger("gateway.server.http")

_Awaiting = Literal["head", "body"]


class AddressCounts:
    """Open connections per client address, under a cap; each address's refusals logged once a spell."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: Counter[str] = Counter()
        self._refusing: set[str] = set()

    def open(self, address: str) -> bool:
        """Count a new connection from `address`, or refuse it (False) when the address is at the cap."""
        if self._open[address] >= self.cap:
            if address not in self._refusing:  # a flood would otherwise log once per connection
                self._refusing.add(address)
                log.warning(
                    "HTTP connections refused: too many from one address",
                    extra={"address": address, "key": "http.max_connections_per_address", "value": self.cap},
                )
            return False
        self._open[address] += 1
        return True

    def close(self, address: str) -> None:
        """A counted connection from `address` has closed."""
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]
        if self._open[address] < self.cap:
            self._refusing.discard(address)

    def __getitem__(self, address: str) -> int:
        return self._open[address]


def guarded_protocol(http: HttpConfig) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with `http`'s connection cap and read deadlines (see the module)."""

    class Guarded(GuardedH11):
        settings = http
        addresses = AddressCounts(http.max_connections_per_address)

    return Guarded


class GuardedH11(H11Protocol):
    """See the module's docstring; `guarded_protocol` binds the settings and the shared counts."""

    settings: ClassVar[HttpConfig]
    addresses: ClassVar[AddressCounts]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._address: str | None = None
        self._awaiting: _Awaiting | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        address = _address_of(transport)
        if not self.addresses.open(address):
            transport.abort()  # before uvicorn knows of it: nothing to undo, the descriptor is freed
            return
        self._address = address
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._address is None:  # refused at accept
            return
        self._set_deadline(None)
        self.addresses.close(self._address)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Keep the deadline for what the client owes now: a head, a body's rest, or nothing."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        self._set_deadline("head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None)

    def _set_deadline(self, awaiting: _Awaiting | None) -> None:
        if awaiting == self._awaiting:
            return  # the deadline already running stays: more bytes do not extend it
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._awaiting = awaiting
        if awaiting == "head":
            self._deadline = self.loop.call_later(self.settings.header_timeout_seconds, self._head_late)
        elif awaiting == "body":
            self._deadline = self.loop.call_later(self.settings.body_timeout_seconds, self._body_late)

    def _head_late(self) -> None:
        # No answer: h11 can send none before a request's head, and a silent client reads none.
        self._deadline = None
        log.debug("HTTP connection closed: no request head in time", extra={"address": self._address})
        self.transport.close()

    def _body_late(self) -> None:
        self._deadline = None
        cycle = self.cycle  # a body is owed: its request's cycle exists
        if not cycle.response_started:
            cycle.disconnected = True  # the app's read ends as at a disconnect; its answer goes nowhere
            cycle.body = bytearray()
            cycle.message_event.set()
            self._answer(self._late_body())
            log.info(
                "HTTP request refused",
                extra={"status": 408, "key": "http.body_timeout_seconds", "address": self._address},
            )
        self.transport.close()

    def _late_body(self) -> Refusal:
        limit = self.settings.body_timeout_seconds
        return Refusal(
            408,
            f"the request body did not arrive within http.body_timeout_seconds ({limit:g} s): send it "
            "without pauses, or raise the limit",
            "http.body_timeout_seconds",
            limit,
        )

    def _answer(self, refusal: Refusal) -> None:
        """Write `refusal` as the whole answer, saying that the connection closes after it."""
        body = refusal.body()
        headers = [*refusal.headers(len(body)), (b"connection", b"close")]
        try:
            for event in (
                h11.Response(status_code=refusal.status, headers=headers, reason=_reason(refusal.status)),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:  # h11 cannot answer in this state: closing says enough
            log.debug("no answer before closing", exc_info=True)


def _reason(status: int) -> bytes:
    return HTTPStatus(status).phrase.encode()


def _address_of(transport: asyncio.BaseTransport) -> str:
    peer: object = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])  # pyright: ignore[reportUnknownArgumentType]
    return "unknown"
