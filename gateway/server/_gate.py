"""The MCP endpoint's door, in front of the SDK's streamable HTTP transport.

In order: the Host and Origin headers (DNS rebinding protection: the SDK's own check, with the
allowed names from the config), a place among the caller's requests open at once, the body's size
(the SDK's own limit), and for a call that runs something an in-flight place (`_admission.py`). Then
the SDK's session manager serves the request, on either protocol era. What the SDK refuses by itself
(a new session past `max_sessions`, an unknown or expired session) keeps the SDK's status, reworded
to name the config key.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.auth import Owner, identity_in
from gateway.config.server import HttpConfig
from gateway.server._admission import Admission, RequestCounts, Ticket
from gateway.server._refusals import RETRY_AFTER_SECONDS, Refusal, Reworded, send_refusal

__all__ = ["McpGate", "caller_of", "hold_ticket", "security_settings", "session_digest"]

log = logging.getLogger("gateway.server.http")

TICKET = "codemode.ticket"
"""Where an admitted call's `Ticket` rides in the ASGI scope, for the handler that serves it."""

_PARSE_ON_LOOP_BYTES = 64 * 1024  # a larger body is parsed on a worker thread


def security_settings(http: HttpConfig) -> TransportSecuritySettings:
    """The SDK's DNS rebinding protection, with the Host and Origin values the config allows."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=http.hosts(), allowed_origins=http.origins()
    )


def caller_of(scope: Scope) -> Owner:
    """Who the per-caller caps and stores count: the authenticated principal of its issuer; without
    `auth`, the MCP session (handshake era), else the client's address.

    A session id is a credential for its session: only a digest of it is kept and logged.
    """
    identity = identity_in(scope)
    if identity is not None:
        return identity.owner
    session = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
    if session:
        return Owner.of_session(session_digest(session))
    client = scope.get("client")
    return Owner.of_address(client[0] if client else "unknown")


def session_digest(session_id: str) -> str:
    """How a session is named in logs: a session id lets whoever holds it act in that session."""
    return "session:" + hashlib.sha256(session_id.encode()).hexdigest()[:16]


async def hold_ticket(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: the handler serving an admitted call holds its place until it returns."""
    request = ctx.request
    ticket = request.scope.get(TICKET) if isinstance(request, Request) else None
    if not isinstance(ticket, Ticket):
        return await call_next(ctx)
    ticket.hold()
    try:
        return await call_next(ctx)
    finally:
        ticket.release()


class McpGate:
    """An ASGI app: the checks above, then `transport` (the SDK's streamable HTTP app)."""

    def __init__(
        self, transport: ASGIApp, http: HttpConfig, admission: Admission, shutting_down: Callable[[], bool]
    ) -> None:
        self._transport = transport
        self._http = http
        self._admission = admission
        self._shutting_down = shutting_down
        self._security = TransportSecurityMiddleware(security_settings(http))
        self._requests = RequestCounts(http.requests_in_flight_per_caller())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._transport(scope, receive, send)
            return
        refusal = await self._origin_refusal(scope)
        if refusal is not None:
            await _refuse(send, refusal, scope)
            return
        caller = caller_of(scope)
        refusal = self._requests.enter(caller)  # before the body is read: a caller holds few at once
        if refusal is not None:
            await _refuse(send, refusal, scope)
            return
        try:
            await self._within_size(scope, receive, send)
        finally:
            self._requests.leave(caller)

    async def _within_size(self, scope: Scope, receive: Receive, send: Send) -> None:
        reached = False

        async def within_limit(scope: Scope, receive: Receive, send: Send) -> None:
            nonlocal reached
            reached = True
            await self._admitted(scope, receive, send)

        too_large = Reworded(
            send, lambda status: self._too_large() if status == 413 and not reached else None
        )
        await RequestBodyLimitMiddleware(within_limit, self._http.max_body_bytes)(scope, receive, too_large)
        if too_large.refusal is not None:
            _log_refusal(too_large.refusal, scope)

    async def _origin_refusal(self, scope: Scope) -> Refusal | None:
        # Not as a POST: the content type is the SDK's transport's to check, with its own answer.
        answer = await self._security.validate_request(Request(scope))
        if answer is None:
            return None
        if answer.status_code == 421:
            return Refusal(
                421,
                "this Host header is not allowed (http.allowed_hosts): reach the gateway by an allowed "
                "name, or add this one to http.allowed_hosts",
                "http.allowed_hosts",
            )
        return Refusal(
            answer.status_code,
            "this Origin is not allowed (http.allowed_origins): a web page may only reach the gateway "
            "from an allowed origin; add it to http.allowed_origins if it should",
            "http.allowed_origins",
        )

    def _too_large(self) -> Refusal:
        limit = self._http.max_body_bytes
        return Refusal(
            413,
            f"the request body is larger than http.max_body_bytes ({limit} bytes): send a smaller "
            "request, or raise the limit",
            "http.max_body_bytes",
            limit,
        )

    async def _admitted(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        session = headers.get(MCP_SESSION_ID_HEADER)
        posted = scope["method"] == "POST"
        read = await _read_body(receive) if posted else (b"", receive)
        if read is None:
            return  # the client went away, or its body came too late (answered 408), before its end
        body, replay = read
        if posted and session is None and _handshake_era(headers) and self._shutting_down():
            await _refuse(send, _no_new_sessions(), scope)
            return
        ticket: Ticket | None = None
        if posted and await _is_execution(body):
            caller = caller_of(scope)
            outcome = await self._admit(caller, receive)  # past the body: only a disconnect comes
            if outcome is None:
                return  # the client went away while its call waited
            if isinstance(outcome, Refusal):
                await _refuse(send, outcome, scope)
                return
            ticket = scope[TICKET] = outcome
        reworded = Reworded(send, lambda status: self._sdk_refusal(status, session))
        try:
            await self._transport(scope, replay, reworded)
        finally:
            if ticket is not None:
                ticket.release()
        if reworded.refusal is not None:
            _log_refusal(reworded.refusal, scope)

    async def _admit(self, caller: Owner, receive: Receive) -> Ticket | Refusal | None:
        """An in-flight place, or a refusal; None if the client disconnected while its call waited."""
        outcome: list[Ticket | Refusal] = []
        gone = False
        async with anyio.create_task_group() as group:

            async def admit() -> None:
                outcome.append(await self._admission.admit(caller))
                group.cancel_scope.cancel()

            async def watch() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                group.cancel_scope.cancel()

            group.start_soon(watch)
            group.start_soon(admit)
        if gone:
            if outcome and isinstance(outcome[0], Ticket):
                outcome[0].release()
            return None
        return outcome[0]

    def _sdk_refusal(self, status: int, session: str | None) -> Refusal | None:
        http = self._http
        if status == 503 and session is None:  # the session manager's only 503
            return Refusal(
                503,
                f"too many open sessions (http.max_sessions = {http.max_sessions}): retry later; an MCP "
                "2026-07-28 client needs no session",
                "http.max_sessions",
                http.max_sessions,
                RETRY_AFTER_SECONDS,
            )
        if status == 404 and session is not None:  # unknown, expired or closed: the spec's 404
            return Refusal(
                404,
                "session not found: it was closed, or expired after http.session_idle_seconds "
                f"({http.session_idle_seconds:g} s) without requests, or (behind a load balancer) the "
                "request reached a replica that did not create it (pin sessions by Mcp-Session-Id); "
                "start a new session",
                "http.session_idle_seconds",
                http.session_idle_seconds,
            )
        return None


def _handshake_era(headers: Headers) -> bool:
    """Whether the SDK routes this request to the handshake era (its own rule: by the version header)."""
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _no_new_sessions() -> Refusal:
    return Refusal(
        503,
        "the gateway is shutting down and opens no new sessions: retry shortly (another instance may answer)",
        retry_after=RETRY_AFTER_SECONDS,
    )


async def _read_body(receive: Receive) -> tuple[bytes, Receive] | None:
    """The whole body (already bounded by the size limit), and a `receive` that gives it again; None
    if the client disconnected before its end."""
    chunks: list[bytes] = []
    seen: deque[Message] = deque()
    while True:
        message = await receive()
        seen.append(message)
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break

    async def replay() -> Message:
        return seen.popleft() if seen else await receive()

    return b"".join(chunks), replay


async def _is_execution(body: bytes) -> bool:
    """Whether the body calls a tool that runs something: execute_code or an exposed tool.

    The body is parsed as JSON, not searched for words: JSON may spell `tools/call` with escapes.
    """
    try:
        if len(body) <= _PARSE_ON_LOOP_BYTES:
            message: object = json.loads(body)
        else:
            message = await anyio.to_thread.run_sync(json.loads, body)
    except (ValueError, RecursionError):
        return False  # not JSON: the transport answers that
    if not isinstance(message, dict):
        return False
    fields = cast("dict[str, object]", message)
    if fields.get("method") != "tools/call":
        return False
    params = fields.get("params")
    name = cast("dict[str, object]", params).get("name") if isinstance(params, dict) else None
    return name != "search_docs"


async def _refuse(send: Send, refusal: Refusal, scope: Scope) -> None:
    await send_refusal(send, refusal)
    _log_refusal(refusal, scope)


def _log_refusal(refusal: Refusal, scope: Scope) -> None:
    level = logging.WARNING if refusal.status in (403, 421) else logging.INFO
    log.log(
        level,
        "HTTP request refused",
        extra={"status": refusal.status, "key": refusal.key, "caller": str(caller_of(scope))},
    )
