"""The pool of child MCP servers: connected in parallel, in the background; one failing stops no other."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncGenerator, Callable, Hashable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
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

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT_SECONDS", "ChildPool", "ChildSettings", "PoolChanges"]

DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 5.0

log = logging.getLogger("gateway.children")


def _same(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class ChildSettings:
    """The pool-wide settings each child takes unless its own entry overrides them (the config's
    top-level keys), as a reload hands them over."""

    startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS
    tool_call_timeout_seconds: float = DEFAULT_TOOL_CALL_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class PoolChanges:
    """What `ChildPool.reconfigure` did, by child name (each list in config order)."""

    started: list[str]
    stopped: list[str]
    replaced: list[str]
    restarted: list[str]  # unchanged, but failed for good before: given a fresh start

    def __bool__(self) -> bool:
        return bool(self.started or self.stopped or self.replaced or self.restarted)


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
        self._settings = ChildSettings(
            startup_timeout_seconds,
            restart or RestartPolicy(),
            max_message_bytes,
            max_concurrent_calls,
            tool_call_timeout_seconds,
        )
        self._reconnect = reconnect
        self._start_lazy = start_lazy
        self._draw = draw
        self._shutdown_timeout = shutdown_timeout_seconds
        self._redact = redact
        self._children = {name: self._new_child(name, server) for name, server in servers.items()}
        self._unavailable = {name: redact(reason) for name, reason in (unavailable or {}).items()}
        self._task_group: TaskGroup | None = None
        self._retiring: set[Child] = set()  # left out by a reload, serving their last requests
        self._membership = anyio.Event()  # set (and replaced) when children are added or removed

    def _new_child(self, name: str, server: ServerConfig) -> Child:
        settings = self._settings
        return Child(
            name,
            server,
            server.startup_timeout_seconds or settings.startup_timeout_seconds,
            _restart_policy(settings.restart, server.restart),
            reconnect=self._reconnect,
            lazy=server.lazy and not self._start_lazy,
            idle_seconds=server.idle_seconds,
            draw=self._draw,
            max_message_bytes=server.max_message_bytes or settings.max_message_bytes,
            max_concurrent_calls=server.max_concurrent_calls or settings.max_concurrent_calls,
            tool_call_timeout=settings.tool_call_timeout_seconds,
            redact=self._redact,
        )

    def reconfigure(
        self,
        servers: Mapping[str, ServerConfig],
        settings: ChildSettings,
        unavailable: Mapping[str, str] | None = None,
    ) -> PoolChanges:
        """Serve `servers` from now on (a config reload): a child whose entry is new is started, one
        whose entry is gone is stopped, one whose entry changed is replaced by a fresh one; the others
        keep their connections and take `settings` in place. A child that had failed for good is
        started again. Calls already holding a stopped or replaced child finish on it: it is stopped
        once they have (within `settings.tool_call_timeout_seconds`). Returns what it did."""
        if self._task_group is None:
            raise RuntimeError("reconfigure needs the pool entered")
        self._settings = settings
        changes = PoolChanges([], [], [], [])
        for name in [name for name in self._children if name not in servers]:
            self._retire(self._children.pop(name))
            changes.stopped.append(name)
        for name, server in servers.items():
            child = self._children.get(name)
            if child is None:
                changes.started.append(name)
            elif child.server != server:
                changes.replaced.append(name)
            elif child.state is ChildState.FAILED:
                changes.restarted.append(name)
            else:
                child.retune(
                    startup_timeout=server.startup_timeout_seconds or settings.startup_timeout_seconds,
                    restart=_restart_policy(settings.restart, server.restart),
                    max_message_bytes=server.max_message_bytes or settings.max_message_bytes,
                    max_concurrent_calls=server.max_concurrent_calls or settings.max_concurrent_calls,
                    tool_call_timeout=settings.tool_call_timeout_seconds,
                )
                continue
            if child is not None:
                self._retire(child)
            fresh = self._children[name] = self._new_child(name, server)
            self._task_group.start_soon(fresh.run, name=f"codemode-child-{name}")
        # Config order, as `names` and `statuses` promise.
        self._children = {name: self._children[name] for name in servers}
        self._unavailable = {name: self._redact(reason) for name, reason in (unavailable or {}).items()}
        self.wake_watchers()
        return changes

    def _retire(self, child: Child) -> None:
        assert self._task_group is not None
        child.retired = True
        self._retiring.add(child)
        self._task_group.start_soon(self._stop_retired, child, name=f"codemode-child-{child.name}-retiring")

    async def _stop_retired(self, child: Child) -> None:
        with anyio.move_on_after(self._settings.tool_call_timeout_seconds):
            await child.wait_no_requests()
        child.stop()
        with anyio.move_on_after(self._shutdown_timeout):
            await child.finished.wait()
        self._retiring.discard(child)
        log.info("child stopped after a config reload", extra={"child": child.name})

    def wake_watchers(self) -> None:
        """Wake every `wait_changed`: children were added or removed, or what is made of their
        statuses (the catalog, under a reloaded policy) changed."""
        self._membership.set()
        self._membership = anyio.Event()

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncGenerator[Self]:
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                for child in self._children.values():
                    task_group.start_soon(child.run, name=f"codemode-child-{child.name}")
                yield self
            finally:
                await self._stop(task_group)

    async def _stop(self, task_group: TaskGroup) -> None:
        children = [*self._children.values(), *self._retiring]
        for child in children:
            child.stop()
        # Shielded so that a cancelled caller still reaps every child process; bounded so that a
        # child ignoring its closed stdin (or an HTTP server that never answers) cannot hang exit.
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._shutdown_timeout):
            for child in children:
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

    def settled(self) -> bool:
        """Whether no child is connecting now (what `wait_ready` waits for)."""
        return all(child.state is not ChildState.CONNECTING for child in self._children.values())

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

    async def wait_children(self, names: Iterable[str]) -> None:
        """Wait until none of the children `names` is connecting; one a reload took away meanwhile is
        not waited for (its retired process stops, which ends a wait on it)."""
        for name in names:
            if (child := self._children.get(name)) is not None:
                await child.wait_settled()

    async def wait_status(self, name: str, predicate: Callable[[ChildStatus], bool]) -> ChildStatus:
        """Wait until one child's status satisfies `predicate`; bound it with a timeout."""
        child = self._child(name)
        while not predicate(status := child.status()):
            await child.wait_changed()
        return status

    async def wait_changed(self, seen: Sequence[ChildStatus]) -> list[ChildStatus]:
        """Wait until `statuses()` differs from `seen` (a child's state or tools changed), or until
        `wake_watchers` (a reload); returns the statuses then."""
        before = {status.name: status for status in seen}
        membership = self._membership  # taken before the check: a reload after it is not missed

        async def watch(child: Child, group: TaskGroup) -> None:
            # Checked, then waited on, with no checkpoint between: no change slips past.
            while child.status() == before.get(child.name):
                await child.wait_changed()
            group.cancel_scope.cancel()

        async def reloaded(group: TaskGroup) -> None:
            await membership.wait()
            group.cancel_scope.cancel()

        if self.statuses() == list(seen):
            async with anyio.create_task_group() as group:
                group.start_soon(reloaded, group)
                for child in self._children.values():
                    group.start_soon(watch, child, group)
        return self.statuses()

    def start(self, name: str) -> None:
        """Start a lazy child that is idle (as its first use would); unknown names are ignored."""
        child = self._children.get(name)
        if child is not None:
            child.start()

    async def call_tool(
        self, server_name: str, tool_name: str, arguments: dict[str, Any], *, holder: Hashable | None = None
    ) -> types.CallToolResult:
        """Call a child's tool, in `holder`'s share of its call slots (None: no share, as over stdio).
        Raises ChildUnavailable (failed or unknown child) or ToolCallError."""
        return await self._child(server_name).call_tool(tool_name, arguments, holder=holder)

    async def list_resources(
        self, server_name: str, cursor: str | None = None, *, holder: Hashable | None = None
    ) -> types.ListResourcesResult:
        """One page of a child's resources (the first, or the one `cursor` names), through its call
        slots as a tool call goes. Raises ChildUnavailable, or ToolCallError (no resources capability)."""
        return await self._child(server_name).list_resources(cursor, holder=holder)

    async def list_resource_templates(
        self, server_name: str, cursor: str | None = None, *, holder: Hashable | None = None
    ) -> types.ListResourceTemplatesResult:
        """One page of a child's resource templates; raises as `list_resources` does."""
        return await self._child(server_name).list_resource_templates(cursor, holder=holder)

    async def read_resource(
        self, server_name: str, uri: str, *, holder: Hashable | None = None
    ) -> types.ReadResourceResult | None:
        """A child's resource at `uri`, or None when the child has no such resource; raises as
        `list_resources` does."""
        return await self._child(server_name).read_resource(uri, holder=holder)

    def _child(self, name: str) -> Child:
        child = self._children.get(name)
        if name in self._unavailable:
            raise ChildUnavailable(f"child server {name!r} is unavailable: {self._unavailable[name]}")
        if child is None:
            known = ", ".join(sorted(self.names)) or "none"
            raise ChildUnavailable(self._redact(f"no child server named {name!r} (configured: {known})"))
        return child
