"""codemode-gateway: one MCP server in front of many, running model-written Python in a wasm sandbox."""

import gc

# Importing builds thousands of classes and frees nothing, so collections in between only cost time;
# the importer's setting is restored once imported (freezing the heap is the CLI's business).
_collecting = gc.isenabled()
gc.disable()
try:
    from gateway.audit import AuditLog
    from gateway.calls import ApprovalNeeded, Gateway, Resume
    from gateway.config import GatewayConfig, load_config
    from gateway.errors import (
        ApprovalLimitExceeded,
        ApprovalRequired,
        BackgroundRefused,
        CapabilityDenied,
        ChildUnavailable,
        CodeTooLarge,
        ConfigError,
        EndedByShutdown,
        ExecutionCancelled,
        ExecutionFailed,
        FuelExhausted,
        GatewayBusy,
        GatewayError,
        GuestCrashed,
        LimitExceeded,
        MemoryLimitExceeded,
        MiddlewareFailed,
        PolicyDenied,
        QuotaExceeded,
        ResumeRefused,
        SandboxUnavailable,
        SecretInArguments,
        ShownTooLarge,
        ShownTooMany,
        SnippetError,
        StackExhausted,
        StateUnavailable,
        TokenRefused,
        ToolCallError,
        ToolCallLimitExceeded,
        ToolPayloadTooLarge,
        WallTimeExceeded,
    )
    from gateway.sandbox import Sandbox, ToolCaller
    from gateway.sandbox.limits import SandboxLimits
    from gateway.sandbox.result import ErrorInfo, ExecutionResult, ToolCallRecord
    from gateway.server import serve_http, serve_stdio
    from gateway.shared import Redactor
    from gateway.shared import package_version as _package_version
finally:
    if _collecting:
        gc.enable()

__version__ = _package_version()

__all__ = (
    "ApprovalLimitExceeded",
    "ApprovalNeeded",
    "ApprovalRequired",
    "AuditLog",
    "BackgroundRefused",
    "CapabilityDenied",
    "ChildUnavailable",
    "CodeTooLarge",
    "ConfigError",
    "EndedByShutdown",
    "ErrorInfo",
    "ExecutionCancelled",
    "ExecutionFailed",
    "ExecutionResult",
    "FuelExhausted",
    "Gateway",
    "GatewayBusy",
    "GatewayConfig",
    "GatewayError",
    "GuestCrashed",
    "LimitExceeded",
    "MemoryLimitExceeded",
    "MiddlewareFailed",
    "PolicyDenied",
    "QuotaExceeded",
    "Redactor",
    "Resume",
    "ResumeRefused",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "SecretInArguments",
    "ShownTooLarge",
    "ShownTooMany",
    "SnippetError",
    "StackExhausted",
    "StateUnavailable",
    "TokenRefused",
    "ToolCallError",
    "ToolCallLimitExceeded",
    "ToolCallRecord",
    "ToolCaller",
    "ToolPayloadTooLarge",
    "WallTimeExceeded",
    "load_config",
    "serve_http",
    "serve_stdio",
)
