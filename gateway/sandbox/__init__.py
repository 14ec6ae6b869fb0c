"""CPython on WASI under wasmtime: a fresh instance per run, bounded by fuel, epochs, memory, output."""

from gateway.sandbox._engine import COMPONENT_PATH, WASMTIME_VERSION, component_sha256, default_cache_dir
from gateway.sandbox._host_call import MAX_DOCS_ARGS_BYTES, MAX_DOCS_QUERIES, MAX_URI_CHARS, cancelled_error
from gateway.sandbox._journal import HostAnswer, HostJournal, PausedCall, arguments_digest
from gateway.sandbox._sandbox import Sandbox
from gateway.sandbox._services import HostServices, ToolCaller
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ErrorInfo, ExecutionResult, ShownItem, ToolCallRecord

__all__ = (
    "COMPONENT_PATH",
    "MAX_DOCS_ARGS_BYTES",
    "MAX_DOCS_QUERIES",
    "MAX_URI_CHARS",
    "WASMTIME_VERSION",
    "ErrorInfo",
    "ExecutionResult",
    "HostAnswer",
    "HostJournal",
    "HostServices",
    "PausedCall",
    "Sandbox",
    "SandboxLimits",
    "ShownItem",
    "ToolCallRecord",
    "ToolCaller",
    "arguments_digest",
    "cancelled_error",
    "component_sha256",
    "default_cache_dir",
)
