"""State shared by replicas, in Redis (the config's `state` section)."""

from gateway.state._shared import SharedState, StateUnavailable
from gateway.state.config import StateConfig

__all__ = ["SharedState", "StateConfig", "StateUnavailable"]
