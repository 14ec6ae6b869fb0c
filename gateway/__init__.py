"""codemode-gateway: one MCP server in front of many, running model-written Python in a wasm sandbox."""

from gateway._audit import AuditConfig, AuditLog
from gateway._errors import (
    CapabilityDenied,
    ChildUnavailable,
    CodeTooLarge,
    ConfigError,
    ExecutionCancelled,
    ExecutionFailed,
    FuelExhausted,
    GatewayBusy,
    GatewayError,
    GuestCrashed,
    LimitExceeded,
    MemoryLimitExceeded,
    PolicyDenied,
    QuotaExceeded,
    SandboxUnavailable,
    SnippetError,
    StackExhausted,
    ToolCallError,
    ToolCallLimitExceeded,
    ToolPayloadTooLarge,
    WallTimeExceeded,
)
from gateway._host import ToolCaller
from gateway._limits import SandboxLimits
from gateway._result import ErrorInfo, ExecutionResult, ToolCallRecord
from gateway._sandbox import Sandbox
from gateway._secrets import Redactor

__all__ = [
    "AuditConfig",
    "AuditLog",
    "CapabilityDenied",
    "ChildUnavailable",
    "CodeTooLarge",
    "ConfigError",
    "ErrorInfo",
    "ExecutionCancelled",
    "ExecutionFailed",
    "ExecutionResult",
    "FuelExhausted",
    "GatewayBusy",
    "GatewayError",
    "GuestCrashed",
    "LimitExceeded",
    "MemoryLimitExceeded",
    "PolicyDenied",
    "QuotaExceeded",
    "Redactor",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "SnippetError",
    "StackExhausted",
    "ToolCallError",
    "ToolCallLimitExceeded",
    "ToolCallRecord",
    "ToolCaller",
    "ToolPayloadTooLarge",
    "WallTimeExceeded",
]
