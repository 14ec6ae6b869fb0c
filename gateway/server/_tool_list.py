"""`notifications/tools/list_changed`, sent the way each protocol era delivers it.

What tools/list answers changes at run time: an exposed tool appears when its child becomes ready
and goes when it fails, when its child's tools change, or when a lockfile quarantines it; and
execute_code's annotations follow what the children can do. The server declares `tools.listChanged`
and tells clients whenever the answer changed:

- handshake era (2025-11-25 and older): on the connection of every session whose handshake is done
  (its `notifications/initialized` marks it), as a plain notification;
- 2026-07-28: only on the `subscriptions/listen` streams a client opened (a change notification
  on the shared channel is one nobody asked for, and the SDK drops it). The SDK's `ListenHandler`
  serves those streams, fed by an in-memory bus; declaring listChanged follows from serving it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from gateway.calls import Gateway
from gateway.server._approvals import asks_in_rounds

__all__ = ["ToolListChanges", "watch_tool_list"]

log = logging.getLogger("gateway.server")


class ToolListChanges:
    """Who is told that the tool list changed: listen streams (2026-07-28) and handshake-era sessions."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._sessions: list[ServerSession] = []

    async def on_initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """A handshake-era session is ready for notifications: keep its connection's channel."""
        if not asks_in_rounds(ctx):
            self._sessions.append(ctx.session)

    async def announce(self) -> None:
        """Tell every listener and every handshake-era session; a closed one is forgotten."""
        await self.bus.publish(ToolsListChanged())
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # the client has gone: nobody to tell
                log.debug("tools/list_changed not delivered", exc_info=True)
                self._sessions.remove(session)


async def watch_tool_list(
    gateway: Gateway, listing: Callable[[], list[types.Tool]], changes: ToolListChanges
) -> None:
    """Announce every change of what `listing()` (tools/list's answer) holds, until cancelled.

    It is looked at whenever the catalog the model sees is rebuilt; a rebuild that leaves the
    answer as it was (a child reconnecting with the same tools) announces nothing.
    """
    catalog = gateway.catalog()
    listed = listing()
    while True:
        catalog = await gateway.catalog_changed(catalog)
        try:
            current = listing()
            if current != listed:
                listed = current
                log.info("tool list changed", extra={"tools": [tool.name for tool in current]})
                await changes.announce()
        except Exception:  # a notification failing must never take the server down
            log.exception("announcing a tool list change failed")
