"""codemode-gateway: one MCP server in front of many, running model-written Python in a wasm sandbox."""

from gateway._gateway import Gateway
from gateway._redaction import Redactor
from gateway._resume import ApprovalNeeded, Resume
from gateway._version import package_version as _package_version
from gateway.audit import AuditLog
from gateway.config import GatewayConfig, load_config
from gateway.errors import (
    ApprovalLimitExceeded,
    ApprovalRequired,
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
    ResumeRefused,
    SandboxUnavailable,
    SecretInArguments,
    ShownTooLarge,
    ShownTooMany,
    SnippetError,
    StackExhausted,
    TokenRefused,
    ToolCallError,
    ToolCallLimitExceeded,
    ToolPayloadTooLarge,
    WallTimeExceeded,
)
from gateway.sandbox import ErrorInfo, ExecutionResult, Sandbox, SandboxLimits, ToolCaller, ToolCallRecord
from gateway.server import serve_http, serve_stdio

__version__ = _package_version()

__all__ = (
    "ApprovalLimitExceeded",
    "ApprovalNeeded",
    "ApprovalRequired",
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
    "Gateway",
    "GatewayBusy",
    "GatewayConfig",
    "GatewayError",
    "GuestCrashed",
    "LimitExceeded",
    "MemoryLimitExceeded",
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
