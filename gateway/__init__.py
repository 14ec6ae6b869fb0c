"""codemode-gateway: one MCP server in front of many, running model-written Python in a wasm sandbox."""

import gc
import importlib
import typing

if typing.TYPE_CHECKING:
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

# Each public name's home: importing the package imports none of them, so a command (or a user)
# pays only for the wings it touches.
_HOMES: dict[str, str] = {
    "AuditLog": "gateway.audit",
    "ApprovalNeeded": "gateway.calls",
    "Gateway": "gateway.calls",
    "Resume": "gateway.calls",
    "GatewayConfig": "gateway.config",
    "load_config": "gateway.config",
    "ApprovalLimitExceeded": "gateway.errors",
    "ApprovalRequired": "gateway.errors",
    "BackgroundRefused": "gateway.errors",
    "CapabilityDenied": "gateway.errors",
    "ChildUnavailable": "gateway.errors",
    "CodeTooLarge": "gateway.errors",
    "ConfigError": "gateway.errors",
    "EndedByShutdown": "gateway.errors",
    "ExecutionCancelled": "gateway.errors",
    "ExecutionFailed": "gateway.errors",
    "FuelExhausted": "gateway.errors",
    "GatewayBusy": "gateway.errors",
    "GatewayError": "gateway.errors",
    "GuestCrashed": "gateway.errors",
    "LimitExceeded": "gateway.errors",
    "MemoryLimitExceeded": "gateway.errors",
    "MiddlewareFailed": "gateway.errors",
    "PolicyDenied": "gateway.errors",
    "QuotaExceeded": "gateway.errors",
    "ResumeRefused": "gateway.errors",
    "SandboxUnavailable": "gateway.errors",
    "SecretInArguments": "gateway.errors",
    "ShownTooLarge": "gateway.errors",
    "ShownTooMany": "gateway.errors",
    "SnippetError": "gateway.errors",
    "StackExhausted": "gateway.errors",
    "StateUnavailable": "gateway.errors",
    "TokenRefused": "gateway.errors",
    "ToolCallError": "gateway.errors",
    "ToolCallLimitExceeded": "gateway.errors",
    "ToolPayloadTooLarge": "gateway.errors",
    "WallTimeExceeded": "gateway.errors",
    "Sandbox": "gateway.sandbox",
    "ToolCaller": "gateway.sandbox",
    "SandboxLimits": "gateway.sandbox.limits",
    "ErrorInfo": "gateway.sandbox.result",
    "ExecutionResult": "gateway.sandbox.result",
    "ToolCallRecord": "gateway.sandbox.result",
    "serve_http": "gateway.server",
    "serve_stdio": "gateway.server",
    "Redactor": "gateway.shared",
}

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


def __getattr__(name: str) -> object:
    """A public name, imported from its home the first time it is asked for."""
    if name == "__version__":
        from gateway.shared import package_version

        value: object = package_version()
    else:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'gateway' has no attribute {name!r}")
        # Importing builds thousands of classes and frees nothing, so collections in between only
        # cost time; the importer's setting is restored once imported (freezing is the CLI's business).
        collecting = gc.isenabled()
        gc.disable()
        try:
            value = getattr(importlib.import_module(home), name)
        finally:
            if collecting:
                gc.enable()
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's own names and every public one, resolved or not."""
    return sorted({*globals(), *__all__, "__version__"})
