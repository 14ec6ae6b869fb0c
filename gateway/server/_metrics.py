"""`/metrics` over HTTP, and the count of approvals whose retry the SDK's state boundary refused.

`/metrics` is open, as the probes are: a Prometheus scraper has no token, and what it reads is
counts, durations and states (the children's names among them), never arguments, results, callers
or secrets. `http.metrics: false` leaves it out, for a gateway whose port untrusted clients reach.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.telemetry import Telemetry

__all__ = ["REFUSED_STATE", "RefusedStates", "metrics_route"]

REFUSED_STATE = "Invalid or expired requestState"
"""The SDK's one answer to a retry whose requestState it cannot accept (the reason goes to its log)."""


def metrics_route(path: str, telemetry: Telemetry) -> Route:
    """GET `path`: the gateway's metrics in the format the scraper asks for (Prometheus text by default,
    OpenMetrics when its Accept header names it)."""

    async def metrics(request: Request) -> Response:
        body, content_type = telemetry.metrics.exposition(request.headers.get("accept", ""))
        return Response(body, headers={"content-type": content_type, "cache-control": "no-store"})

    return Route(path, metrics, methods=["GET"])


class RefusedStates:
    """Server middleware, outside the SDK's state boundary: counts retries whose approval state it
    refused (expired, tampered with, sealed for another caller) as approvals refused."""

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if ctx.method == "tools/call" and exc.error.message == REFUSED_STATE:
                self._telemetry.approval_refused()
            raise
