"""State replicas share (the `state` section, on Redis), or this process keeps without it."""

from gateway.errors import StateUnavailable
from gateway.state._approvals import LocalSpentApprovals, RedisSpentApprovals, SpentApprovals
from gateway.state._caps import CallerCaps, LocalCallerCaps, RedisCallerCaps
from gateway.state._rates import LocalRateWindows, RateSlot, RateWindows, RedisRateWindows
from gateway.state._shapes import RedisShapeStore
from gateway.state._shared import SharedState
from gateway.state._stores import Stores
from gateway.state.config import StateConfig, literal_password, without_credentials

__all__ = (
    "CallerCaps",
    "LocalCallerCaps",
    "LocalRateWindows",
    "LocalSpentApprovals",
    "RateSlot",
    "RateWindows",
    "RedisCallerCaps",
    "RedisRateWindows",
    "RedisShapeStore",
    "RedisSpentApprovals",
    "SharedState",
    "SpentApprovals",
    "StateConfig",
    "StateUnavailable",
    "Stores",
    "literal_password",
    "without_credentials",
)
