"""CPython on WASI under wasmtime: a fresh instance per run, bounded by fuel, epochs, memory, output.

Beside this face: `result` and `limits` (public modules: what an execution returns, what bounds it),
and the sub-faces `journal` (the host's answers kept across approval rounds) and `component` (the
built component and its compile cache)."""

from gateway.sandbox._host_call import MAX_DOCS_ARGS_BYTES, MAX_DOCS_QUERIES, MAX_URI_CHARS, cancelled_error
from gateway.sandbox._sandbox import Sandbox
from gateway.sandbox._services import HostServices, ToolCaller

__all__ = (
    "MAX_DOCS_ARGS_BYTES",
    "MAX_DOCS_QUERIES",
    "MAX_URI_CHARS",
    "HostServices",
    "Sandbox",
    "ToolCaller",
    "cancelled_error",
)
