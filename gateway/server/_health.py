"""`/healthz` and `/readyz`, for probes: alive, and ready to serve executions.

Ready means: the config is loaded (it is, or nothing would listen), the sandbox is loaded, and every
child has connected or reported why not (ready, failed, reconnecting: none is still on its first
start). A child starting lazily later does not make the gateway unready again. While shutting down
the gateway is not ready, so a load balancer sends new work elsewhere. The answers carry counts, not
child names: probes are not authenticated.

With `state` set the answer says whether the shared store answers (`"state": "unavailable"`), but a
store that is down leaves the gateway ready: every replica shares it, so taking them all out of the
balancer would stop the calls that need no store too (approvals and rates fail closed on their own).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.calls import Gateway
from gateway.children import ChildState

__all__ = ["Readiness", "healthz"]


class Readiness:
    """What `/readyz` answers for `gateway`."""

    def __init__(self, gateway: Gateway, shutting_down: Callable[[], bool]) -> None:
        self._gateway = gateway
        self._shutting_down = shutting_down
        self._children_reported = False

    def check(self) -> tuple[bool, dict[str, Any]]:
        """Whether the gateway is ready, and what each part says."""
        sandbox = self._gateway.sandbox_state()
        states = Counter(status.state.value for status in self._gateway.pool.statuses())
        if not states[ChildState.CONNECTING.value]:
            self._children_reported = True  # once every child has reported, a lazy start is no news
        shutting_down = self._shutting_down()
        ready = sandbox == "ready" and self._children_reported and not shutting_down
        return ready, {
            "ready": ready,
            "config": "loaded",
            "sandbox": sandbox,
            "children": dict(sorted(states.items())),
            "shutting_down": shutting_down,
            "state": self._gateway.stores.health,
        }

    async def readyz(self, request: Request) -> Response:
        ready, body = self.check()
        return JSONResponse(body, status_code=200 if ready else 503)


async def healthz(request: Request) -> Response:
    """Alive: the process answers HTTP."""
    return JSONResponse({"alive": True})
