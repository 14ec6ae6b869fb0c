"""The ASGI app served over HTTP: the MCP endpoint (both protocol eras) and the probes.

The MCP endpoint is the SDK's `StreamableHTTPSessionManager` serving the same lowlevel server that
stdio serves (`build_server`), stateful so that handshake-era clients get sessions (elicitation
needs one), while 2026-07-28 requests are served one by one. In front of it, with an `auth` section,
the SDK's bearer middleware verifies the caller's token (401 with `WWW-Authenticate` otherwise), so
that a principal is known before `McpGate` checks Host and Origin, the body's size, and admits
executions per caller. The probes stay open: a load balancer has no token; so does `/metrics`
(`_metrics.py`), a Prometheus scraper having none either, unless `http.metrics` is false.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.auth import bearer_middleware, build_verifier, require_token, resource_metadata_routes
from gateway.calls import Gateway
from gateway.config.server import HEALTH_PATHS, METRICS_PATH, HttpConfig
from gateway.server._admission import Admission, ExecutionCaps
from gateway.server._gate import McpGate, hold_ticket
from gateway.server._health import Readiness, healthz
from gateway.server._metrics import metrics_route
from gateway.server._refusals import RETRY_AFTER_SECONDS, Refusal, send_refusal
from gateway.server._server import build_server
from gateway.server._sessions import SharedSessions

__all__ = ["HttpApp"]

log = logging.getLogger("gateway.server.http")


class HttpApp:
    """An ASGI app serving `gateway`: MCP at `http.path`, `/healthz`, `/readyz`, `/metrics`; and its
    shutdown."""

    def __init__(self, gateway: Gateway, http: HttpConfig, *, lasting_executions: bool = False) -> None:
        self.http = http
        shared = gateway.stores.caps if gateway.stores.shared is not None else None
        self.admission = Admission(ExecutionCaps.of(http), shared)
        gateway.telemetry.metrics.watch_admission(self.admission)
        self.shutting_down = False
        self._open: set[anyio.CancelScope] = set()
        self._closed = False
        server = build_server(gateway, lasting_executions=lasting_executions)
        server.middleware.append(hold_ticket)
        self.sessions = SharedSessions(server, http)
        # `handle_request`, not the SDK's ASGI wrapper: that one skips it, and with it each caller's share.
        mcp: ASGIApp = McpGate(self.sessions.handle_request, http, self.admission, self._is_shutting_down)
        auth = gateway.config.auth
        self._gateway = gateway
        telemetry = gateway.telemetry
        self._verifier = None if auth is None else build_verifier(auth, on_refusal=telemetry.token_refused)
        readiness = Readiness(gateway, self._is_shutting_down)
        alive, ready = HEALTH_PATHS
        self._app: ASGIApp = Starlette(
            routes=[
                Route(http.path, mcp if auth is None else require_token(mcp, auth)),
                Route(alive, healthz),
                Route(ready, readiness.readyz),
                *([metrics_route(METRICS_PATH, gateway.telemetry)] if http.metrics else []),
                *([] if auth is None else resource_metadata_routes(auth)),
            ],
            middleware=[] if self._verifier is None else bearer_middleware(self._verifier),
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncGenerator[None]:
        async with self.sessions.run():  # the server's lifespan too: tools/list_changed
            yield

    def _is_shutting_down(self) -> bool:
        return self.shutting_down

    def follow_reload(self, _: object = None) -> None:
        """Verify with the static tokens of the config now in force (a reload's listener): a token a
        reload removed is refused from the next request on, without a restart."""
        auth = self._gateway.config.auth
        if self._verifier is not None and auth is not None:
            self._verifier.use_tokens(auth)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self._app(scope, receive, send)
            return
        if self._closed and scope["path"] not in HEALTH_PATHS:  # probes say "shutting down" to the end
            await send_refusal(
                send, Refusal(503, "the gateway is shutting down", retry_after=RETRY_AFTER_SECONDS)
            )
            return
        with anyio.CancelScope() as request:
            self._open.add(request)
            try:
                await self._app(scope, receive, send)
            finally:
                self._open.discard(request)

    async def drain(self, grace_seconds: float) -> None:
        """Stop admitting calls and opening sessions, give those in flight `grace_seconds` to
        finish, then end every request still open (streams, calls past the grace period)."""
        self.shutting_down = True
        self.admission.stop_admitting()
        in_flight = self.admission.in_flight
        if in_flight:
            log.info(
                "waiting for calls in flight", extra={"in_flight": in_flight, "grace_seconds": grace_seconds}
            )
        with anyio.move_on_after(grace_seconds):
            await self.admission.wait_idle()
        if self.admission.in_flight:
            log.warning(
                "grace period over: cancelling calls in flight",
                extra={"in_flight": self.admission.in_flight, "grace_seconds": grace_seconds},
            )
        self._closed = True
        for request in list(self._open):
            request.cancel()
