"""The pool of child MCP servers: connected in parallel, in the background; one failing stops no other."""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Self

import anyio
from anyio import AsyncContextManagerMixin
from anyio.abc import TaskGroup
from mcp import types

from gateway.children._child import Child, ChildState, ChildStatus
from gateway.children.config import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    DEFAULT_TOOL_CALL_TIMEOUT_SECONDS,
    RestartPolicy,
    ServerConfig,
)
from gateway.errors import ChildUnavailable

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT_SECONDS", "ChildPool"]

DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 5.0


def _same(text: str) -> str:
    return text


def _restart_policy(default: RestartPolicy, own: RestartPolicy | None) -> RestartPolicy:
    """A child's policy: the keys its own `restart` names, the top-level one for the others."""
    if own is None:
        return default
    return default.model_copy(update={key: getattr(own, key) for key in own.model_fields_set})


class ChildPool(AsyncContextManagerMixin):
    """Every configured child server. Entering starts the connections and returns at once.

    Each child connects under its own startup timeout; one that fails, exits or stops answering
    is reconnected with backoff ("reconnecting") while the others serve, and is "failed" for good
    once out of attempts. Lazy children start on first use. Use `wait_ready` (or `wait_child`)
    where connected children are needed; `call_tool` waits for a child that is still connecting.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerConfig],
        *,
        startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS,
        shutdown_timeout_seconds: float = DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
        restart: RestartPolicy | None = None,
        reconnect: bool = True,
        start_lazy: bool = False,
        draw: Callable[[], float] = random.random,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
        tool_call_timeout_seconds: float = DEFAULT_TOOL_CALL_TIMEOUT_SECONDS,
        redact: Callable[[str], str] = _same,
        unavailable: Mapping[str, str] | None = None,
    ) -> None:
        """`reconnect=False` fails a child at its first failure, `start_lazy` starts lazy ones at once.

        `unavailable` names configured children that cannot even be started (an unset `${VAR}` in
        their entry, say) with the reason: they are reported as failed, and calls to them say why.

        `max_message_bytes` caps each message from a child, `max_concurrent_calls` the calls to one
        child in flight at once (a child's own setting wins for each).
        `tool_call_timeout_seconds` is the caller's per-call timeout (`sandbox.tool_call_timeout_seconds`):
        only a call abandoned after (nearly) all of it counts toward `restart.after_timeouts`, never one
        cut short by its run's budget or cancelled with its run. `redact` is applied to every error text
        the pool stores or raises (status errors, stderr tails, ChildUnavailable and ToolCallError).
        """
        # `reconnect` and `start_lazy` are for `check`, which reports rather than supervises; `draw` is
        # the backoff's jitter, in [0, 1).
        default = restart or RestartPolicy()
        self._children = {
            name: Child(
                name,
                server,
                server.startup_timeout_seconds or startup_timeout_seconds,
                _restart_policy(default, server.restart),
                reconnect=reconnect,
                lazy=server.lazy and not start_lazy,
                idle_seconds=server.idle_seconds,
                draw=draw,
                max_message_bytes=server.max_message_bytes or max_message_bytes,
                max_concurrent_calls=server.max_concurrent_calls or max_concurrent_calls,
                tool_call_timeout=tool_call_timeout_seconds,
                redact=redact,
            )
            for name, server in servers.items()
        }
        self._shutdown_timeout = shutdown_timeout_seconds
        self._redact = redact
        self._unavailable = {name: redact(reason) for name, reason in (unavailable or {}).items()}

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncGenerator[Self]:
        async with anyio.create_task_group() as task_group:
            try:
                for child in self._children.values():
                    task_group.start_soon(child.run, name=f"codemode-child-{child.name}")
                yield self
            finally:
                await self._stop(task_group)

    async def _stop(self, task_group: TaskGroup) -> None:
        for child in self._children.values():
            child.stop()
        # Shielded so that a cancelled caller still reaps every child process; bounded so that a
        # child ignoring its closed stdin (or an HTTP server that never answers) cannot hang exit.
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._shutdown_timeout):
            for child in self._children.values():
                await child.finished.wait()
        # What is left is cancelled; the SDK's stdio teardown is itself shielded and bounded.
        # The group's own scope is shielded, so that the caller's cancellation cannot cut that short.
        task_group.cancel_scope.cancel()
        task_group.cancel_scope.shield = True

    @property
    def names(self) -> list[str]:
        """The configured children, in config order (those that cannot start last)."""
        return [*self._children, *self._unavailable]

    def statuses(self) -> list[ChildStatus]:
        """A snapshot of every child, in config order (those that cannot start last)."""
        never = [
            ChildStatus(name, "-", ChildState.FAILED, reason) for name, reason in self._unavailable.items()
        ]
        return [*(child.status() for child in self._children.values()), *never]

    def tools(self) -> dict[str, list[types.Tool]]:
        """The known tools of every child by name: an idle or reconnecting child's are its last listed."""
        # A call to one of those starts an idle child, or fails fast naming why the child is down.
        return {
            name: list(child.tools)
            for name, child in self._children.items()
            if child.tools or child.state is ChildState.READY
        }

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until no child is connecting (ready, idle, reconnecting or failed); False on timeout."""
        with anyio.move_on_after(timeout):
            for child in self._children.values():
                await child.wait_settled()
            return True
        return False

    async def wait_child(self, name: str) -> ChildStatus:
        """Wait until one child is no longer connecting (its own startup timeout bounds this)."""
        if name in self._unavailable:
            return ChildStatus(name, "-", ChildState.FAILED, self._unavailable[name])
        child = self._child(name)
        await child.wait_settled()
        return child.status()

    async def wait_status(self, name: str, predicate: Callable[[ChildStatus], bool]) -> ChildStatus:
        """Wait until one child's status satisfies `predicate`; bound it with a timeout."""
        child = self._child(name)
        while not predicate(status := child.status()):
            await child.wait_changed()
        return status

    async def wait_changed(self, seen: Sequence[ChildStatus]) -> list[ChildStatus]:
        """Wait until `statuses()` differs from `seen` (a child's state or tools changed); returns it."""
        before = {status.name: status for status in seen}

        async def watch(child: Child, group: TaskGroup) -> None:
            # Checked, then waited on, with no checkpoint between: no change slips past.
            while child.status() == before.get(child.name):
                await child.wait_changed()
            group.cancel_scope.cancel()

        if self.statuses() == list(seen):
            async with anyio.create_task_group() as group:
                for child in self._children.values():
                    group.start_soon(watch, child, group)
                if not self._children:
                    await anyio.sleep_forever()  # nothing can change
        return self.statuses()

    def start(self, name: str) -> None:
        """Start a lazy child that is idle (as its first use would); unknown names are ignored."""
        child = self._children.get(name)
        if child is not None:
            child.start()

    async def call_tool(
        self, server_name: str, tool_name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """Call a child's tool. Raises ChildUnavailable (failed or unknown child) or ToolCallError."""
        return await self._child(server_name).call_tool(tool_name, arguments)

    async def list_resources(self, server_name: str, cursor: str | None = None) -> types.ListResourcesResult:
        """One page of a child's resources (the first, or the one `cursor` names), through its call
        slots as a tool call goes. Raises ChildUnavailable, or ToolCallError (no resources capability)."""
        return await self._child(server_name).list_resources(cursor)

    async def list_resource_templates(
        self, server_name: str, cursor: str | None = None
    ) -> types.ListResourceTemplatesResult:
        """One page of a child's resource templates; raises as `list_resources` does."""
        return await self._child(server_name).list_resource_templates(cursor)

    async def read_resource(self, server_name: str, uri: str) -> types.ReadResourceResult | None:
        """A child's resource at `uri`, or None when the child has no such resource; raises as
        `list_resources` does."""
        return await self._child(server_name).read_resource(uri)

    def _child(self, name: str) -> Child:
        child = self._children.get(name)
        if name in self._unavailable:
            raise ChildUnavailable(f"child server {name!r} is unavailable: {self._unavailable[name]}")
        if child is None:
            known = ", ".join(sorted(self.names)) or "none"
            raise ChildUnavailable(self._redact(f"no child server named {name!r} (configured: {known})"))
        return child
