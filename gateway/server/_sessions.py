"""Handshake-era sessions, each caller holding at most its share of `http.max_sessions`.

The SDK's session manager caps the sessions open at once; one caller could take them all, and every
other caller's `initialize` would get 503. This manager counts the sessions each caller opened (the
`Owner` of its opening request: its principal and issuer with `auth`, else its address) where the
SDK admits and discards them, under the SDK's own lock, so that concurrent openings are counted as
they are admitted. A caller past its share is answered 429, naming `http.max_sessions_per_caller`.
"""

from __future__ import annotations

import logging
from collections import Counter
from contextvars import ContextVar
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from gateway.auth import Owner
from gateway.config.server import HttpConfig
from gateway.server._gate import caller_of, security_settings
from gateway.server._refusals import Refusal, Reworded

__all__ = ["SharedSessions"]

log = logging.getLogger("gateway.server.http")


class _Opening:
    """A request that may open a session: its caller, and how many it held if it was refused."""

    __slots__ = ("caller", "held")

    def __init__(self, caller: Owner) -> None:
        self.caller = caller
        self.held: int | None = None


_OPENING: ContextVar[_Opening | None] = ContextVar("codemode_session_opening", default=None)


class SharedSessions(StreamableHTTPSessionManager):
    """The SDK's session manager for `http`, each caller holding at most its share of the sessions."""

    def __init__(self, server: Server[Any], http: HttpConfig) -> None:
        super().__init__(
            server,
            security_settings=security_settings(http),
            max_request_body_size=http.max_body_bytes,
            max_sessions=http.max_sessions,
            session_idle_timeout=http.session_idle_seconds,
        )
        self.http = http
        self.share = http.sessions_per_caller()
        self._opened_by: dict[str, Owner] = {}
        self._held: Counter[Owner] = Counter()

    def held_by(self, caller: Owner) -> int:
        """The sessions `caller` has open."""
        return self._held[caller]

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's handling, knowing whose request may open a session, and answering a caller past
        its share with 429 instead of the SDK's 503."""
        opening = _Opening(caller_of(scope))
        token = _OPENING.set(opening)
        try:
            reworded = Reworded(send, lambda status: self._refusal(opening) if status == 503 else None)
            await super().handle_request(scope, receive, reworded)
        finally:
            _OPENING.reset(token)
        if reworded.refusal is not None:
            log.info(
                "HTTP request refused",
                extra={"status": 429, "key": reworded.refusal.key, "caller": str(opening.caller)},
            )

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        opening = _OPENING.get()
        if opening is None or (
            self.max_sessions is not None and len(self._server_instances) >= self.max_sessions
        ):
            return super()._admit_session(requestor)  # the gateway-wide limit, as the SDK answers it
        held = self._held[opening.caller]
        if held >= self.share:
            opening.held = held
            return None
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._opened_by[transport.mcp_session_id] = opening.caller
            self._held[opening.caller] += 1
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        caller = self._opened_by.pop(session_id, None)  # discarded once or more: counted down once
        if caller is not None:
            self._held[caller] -= 1
            if self._held[caller] <= 0:
                del self._held[caller]
        await super()._discard_session(session_id, transport)

    def _refusal(self, opening: _Opening) -> Refusal | None:
        if opening.held is None:
            return None  # the SDK's own 503: the gate names http.max_sessions
        http = self.http
        return Refusal(
            429,
            f"this caller has {opening.held} sessions open, its share of http.max_sessions "
            f"(http.max_sessions_per_caller = {self.share}): reuse or close one (HTTP DELETE); an idle "
            f"session closes after http.session_idle_seconds ({http.session_idle_seconds:g} s). An MCP "
            "2026-07-28 client needs no session",
            "http.max_sessions_per_caller",
            self.share,
        )
