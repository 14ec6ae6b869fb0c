"""Child MCP servers: connected over the official SDK client, supervised, reconnected, called."""

from gateway.children._child import ChildState, ChildStatus
from gateway.children._env import child_environment
from gateway.children._pool import ChildPool
from gateway.children._transport import QuietSdkParseErrors, list_all_tools
from gateway.children.config import (
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    SERVER_TYPES,
    HttpServer,
    RestartPolicy,
    ServerConfig,
    SseServer,
    StdioServer,
)

__all__ = (
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "SERVER_TYPES",
    "ChildPool",
    "ChildState",
    "ChildStatus",
    "HttpServer",
    "QuietSdkParseErrors",
    "RestartPolicy",
    "ServerConfig",
    "SseServer",
    "StdioServer",
    "child_environment",
    "list_all_tools",
)
