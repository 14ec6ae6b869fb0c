"""The stores the core uses, in this process (no `state`) or in the store replicas share."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.state._approvals import LocalSpentApprovals, RedisSpentApprovals, SpentApprovals
from gateway.state._rates import LocalRateWindows, RateWindows, RedisRateWindows
from gateway.state._shapes import RedisShapeStore
from gateway.state._shared import SharedState

__all__ = ["Stores"]


@dataclass
class Stores:
    """One of each store; `shared` is the store's handle when replicas share them."""

    approvals: SpentApprovals = field(default_factory=LocalSpentApprovals)
    rates: RateWindows = field(default_factory=LocalRateWindows)
    shapes: RedisShapeStore | None = None  # None: the catalog's own in-memory shapes
    shared: SharedState | None = None

    @classmethod
    def on(cls, state: SharedState) -> Stores:
        """The stores kept in `state`, the store replicas share."""
        return cls(
            approvals=RedisSpentApprovals(state),
            rates=RedisRateWindows(state),
            shapes=RedisShapeStore(state),
            shared=state,
        )
