"""The stdio handshake first: `initialize` is answered before the gateway starts its children.

Spawning the children and loading the sandbox cost the event loop time, and the children then
compete with it for the CPU while they start; a client's `initialize` must not wait for all of it.
`serve_stdio` runs the server at once, gives it a moment to answer the handshake that is
already in the pipe, then starts the gateway. Requests other than the handshake and pings wait at
the gate until the gateway has started; the first of them ends the moment (a 2026-07-28 client
may send no handshake at all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["HANDSHAKE_HEAD_START_SECONDS", "StartGate"]

HANDSHAKE_HEAD_START_SECONDS = 0.5
"""How long the gateway's start waits for the handshake: a client sends it as soon as it spawns us."""


class StartGate:
    """Server middleware: the handshake (`initialize`, or `server/discover` on 2026-07-28) and `ping`
    pass at once; any other request waits until `open()`."""

    HANDSHAKES = frozenset({"initialize", "server/discover"})
    PASSES = HANDSHAKES | {"ping"}

    def __init__(self, start_now: Callable[[], object]) -> None:
        """`start_now`: called when the gateway should start without waiting any longer: the handshake
        has been answered, or a request that needs the gateway has come."""
        self._open = anyio.Event()
        self._start_now = start_now

    def open(self) -> None:
        """Let every request through, from now on (the gateway has started)."""
        self._open.set()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in self.PASSES:
            if not self._open.is_set():  # once open, no wait: a set event's wait yields a loop turn
                self._start_now()
                await self._open.wait()
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        finally:
            if ctx.method in self.HANDSHAKES:
                self._start_now()
