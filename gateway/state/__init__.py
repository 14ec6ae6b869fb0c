"""State replicas share (the `state` section, on Redis), or this process keeps without it."""

from gateway.state._approvals import LocalSpentApprovals, SpentApprovals
from gateway.state._caps import CallerCaps
from gateway.state._rates import LocalRateWindows, RateWindows
from gateway.state._shared import SharedState
from gateway.state._stores import Stores

__all__ = (
    "CallerCaps",
    "LocalRateWindows",
    "LocalSpentApprovals",
    "RateWindows",
    "SharedState",
    "SpentApprovals",
    "Stores",
)
