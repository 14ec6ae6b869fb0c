"""CPython on WASI under wasmtime: a fresh instance per run, bounded by fuel, epochs, memory, output."""

from gateway.sandbox._engine import COMPONENT_PATH, default_cache_dir
from gateway.sandbox._host_call import ToolCaller
from gateway.sandbox._sandbox import HOST_INTERFACE, Sandbox
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult, ToolCallRecord

__all__ = (
    "COMPONENT_PATH",
    "HOST_INTERFACE",
    "ErrorInfo",
    "ExecutionResult",
    "Sandbox",
    "SandboxLimits",
    "ToolCallRecord",
    "ToolCaller",
    "default_cache_dir",
)
