"""The sandbox the gateway runs executions in: loaded in the background, replaced by a reload."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.to_thread

from gateway.children import ChildPool
from gateway.errors import SandboxUnavailable
from gateway.sandbox.limits import SandboxLimits
from gateway.telemetry import SlotUsage

if TYPE_CHECKING:
    from gateway.sandbox import Sandbox

__all__ = ["SandboxLoader", "new_sandbox"]

log = logging.getLogger("gateway")


def new_sandbox(limits: SandboxLimits) -> Sandbox:
    """A sandbox under `limits`, built on the calling (worker) thread; the first one imports the wasm
    runtime there, so a gateway answers its client's handshake without waiting for that import."""
    from gateway.sandbox import Sandbox

    return Sandbox(limits)


class SandboxLoader:
    """The sandbox in force: none while it loads, or the reason it failed to."""

    def __init__(self) -> None:
        self._sandbox: Sandbox | None = None
        self._error: Exception | None = None
        self._ready = anyio.Event()

    async def load(self, limits: SandboxLimits) -> None:
        """Build the sandbox on a worker thread; a failure is logged once and reported on every `get`."""
        try:
            self._sandbox = await anyio.to_thread.run_sync(new_sandbox, limits)
        except Exception as exc:
            log.exception("the sandbox failed to load")
            self._error = exc
        finally:
            self._ready.set()

    def close(self) -> None:
        """Close the sandbox in force, if one loaded."""
        if self._sandbox is not None:
            self._sandbox.close()

    async def get(self) -> Sandbox:
        """The loaded sandbox, waiting for the background load if it is still running."""
        if not self._ready.is_set():  # once loaded, no wait: a set event's wait yields a loop turn
            await self._ready.wait()
        if self._sandbox is None:
            raise SandboxUnavailable(f"the sandbox is unavailable: {self._error}")
        return self._sandbox

    async def ready(self, children: ChildPool, startup_timeout: float) -> Sandbox:
        """The sandbox in force once loaded and once the children still starting have had up to
        `startup_timeout` (a snippet's catalog would miss their tools)."""
        if self._sandbox is not None and children.settled():  # the common case: nothing to wait for
            return self._sandbox
        await self.get()
        await children.wait_ready(timeout=startup_timeout)
        return await self.get()  # the one in force now: a reload may have replaced it meanwhile

    def state(self) -> Literal["loading", "ready", "failed"]:
        """Where the background load is, without waiting (for readiness probes)."""
        if not self._ready.is_set():
            return "loading"
        return "ready" if self._sandbox is not None else "failed"

    def swap(self, sandbox: Sandbox) -> Sandbox | None:
        """Run new executions in `sandbox`; returns the one it replaces."""
        replaced, self._sandbox, self._error = self._sandbox, sandbox, None
        self._ready.set()
        return replaced

    def slot_usage(self) -> SlotUsage | None:
        """How many slots the sandbox in force has and how many are busy, None before it loaded."""
        return self._sandbox.slot_usage() if self._sandbox is not None else None
