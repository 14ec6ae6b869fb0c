"""Child MCP servers: connected over the official SDK client, supervised, reconnected, called."""

from gateway.children._child import ChildState, ChildStatus
from gateway.children._env import PARENT_ENV_VAR, child_environment, inherited_credentials
from gateway.children._pool import ChildPool, ChildSettings, PoolChanges
from gateway.children._transport import QuietSdkParseErrors, list_all_tools
from gateway.children.config import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    DEFAULT_TOOL_CALL_TIMEOUT_SECONDS,
    MAX_MAX_CONCURRENT_CALLS,
    MAX_MAX_MESSAGE_BYTES,
    MIN_MAX_MESSAGE_BYTES,
    SERVER_TYPES,
    HttpServer,
    RestartPolicy,
    ServerConfig,
    SseServer,
    StdioServer,
)

__all__ = (
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "DEFAULT_TOOL_CALL_TIMEOUT_SECONDS",
    "MAX_MAX_CONCURRENT_CALLS",
    "MAX_MAX_MESSAGE_BYTES",
    "MIN_MAX_MESSAGE_BYTES",
    "PARENT_ENV_VAR",
    "SERVER_TYPES",
    "ChildPool",
    "ChildSettings",
    "ChildState",
    "ChildStatus",
    "HttpServer",
    "PoolChanges",
    "QuietSdkParseErrors",
    "RestartPolicy",
    "ServerConfig",
    "SseServer",
    "StdioServer",
    "child_environment",
    "inherited_credentials",
    "list_all_tools",
)
