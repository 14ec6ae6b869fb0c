"""The stores the core uses, in this process (no `state`) or in the store replicas share."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from gateway.state._approvals import LocalSpentApprovals, RedisSpentApprovals, SpentApprovals
from gateway.state._caps import CallerCaps, LocalCallerCaps, RedisCallerCaps
from gateway.state._rates import LocalRateWindows, RateWindows, RedisRateWindows
from gateway.state._shapes import RedisShapeStore
from gateway.state._shared import SharedState
from gateway.state.config import StateConfig

__all__ = ["Stores"]


@dataclass
class Stores:
    """One of each store; `shared` is the store's handle when replicas share them."""

    approvals: SpentApprovals = field(default_factory=LocalSpentApprovals)
    rates: RateWindows = field(default_factory=LocalRateWindows)
    caps: CallerCaps = field(default_factory=LocalCallerCaps)
    shapes: RedisShapeStore | None = None  # None: the catalog's own in-memory shapes
    shared: SharedState | None = None

    @classmethod
    def of(cls, config: StateConfig | None) -> Stores:
        """The stores `config` says: local without it, else on a SharedState not yet `serving`."""
        return cls() if config is None else cls.on(SharedState(config))

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[None]:
        """Keep the shared store reached, and the shapes written behind, while the gateway serves."""
        if self.shared is None:
            yield
            return
        async with self.shared.serving(), anyio.create_task_group() as tasks:
            if self.shapes is not None:
                tasks.start_soon(self.shapes.sync)
            if isinstance(self.caps, RedisCallerCaps):
                tasks.start_soon(self.caps.renew)
            yield
            tasks.cancel_scope.cancel()

    @property
    def health(self) -> str:
        """For `/readyz`: "off" without `state`, else "ok" or "unavailable"."""
        if self.shared is None:
            return "off"
        return "ok" if self.shared.healthy else "unavailable"

    @classmethod
    def on(cls, state: SharedState) -> Stores:
        """The stores kept in `state`, the store replicas share."""
        return cls(
            approvals=RedisSpentApprovals(state),
            rates=RedisRateWindows(state),
            caps=RedisCallerCaps(state),
            shapes=RedisShapeStore(state),
            shared=state,
        )
