"""Child MCP servers: connected over the official SDK client, supervised, reconnected, called."""

from gateway.children._child import ChildState, ChildStatus
from gateway.children._env import PARENT_ENV_VAR, find_command, inherited_credentials
from gateway.children._pool import ChildPool, ChildSettings, PoolChanges
from gateway.children._transport import QuietSdkParseErrors

__all__ = (
    "PARENT_ENV_VAR",
    "ChildPool",
    "ChildSettings",
    "ChildState",
    "ChildStatus",
    "PoolChanges",
    "QuietSdkParseErrors",
    "find_command",
    "inherited_credentials",
)
