"""CPython on WASI under wasmtime: a fresh instance per run, bounded by fuel, epochs, memory, output.

Beside this face: `result` and `limits` (public modules: what an execution returns, what bounds it),
and the sub-faces `journal` (the host's answers kept across approval rounds) and `component` (the
built component and its compile cache). None of them loads wasmtime: `Sandbox` does, when it is
first asked for, so a gateway answers its client's handshake before it loads the runtime."""

import typing

from gateway.sandbox._services import (
    MAX_DOCS_ARGS_BYTES,
    MAX_DOCS_QUERIES,
    MAX_URI_CHARS,
    HostServices,
    ToolCaller,
    cancelled_error,
)

if typing.TYPE_CHECKING:
    from gateway.sandbox._sandbox import Sandbox

__all__ = (
    "MAX_DOCS_ARGS_BYTES",
    "MAX_DOCS_QUERIES",
    "MAX_URI_CHARS",
    "HostServices",
    "Sandbox",
    "ToolCaller",
    "cancelled_error",
)


def __getattr__(name: str) -> object:
    """`Sandbox`, imported with the wasm runtime the first time it is asked for."""
    if name != "Sandbox":
        raise AttributeError(f"module 'gateway.sandbox' has no attribute {name!r}")
    from gateway.sandbox._sandbox import Sandbox

    globals()[name] = Sandbox
    return Sandbox
