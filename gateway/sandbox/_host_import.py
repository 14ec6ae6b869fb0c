"""Defines the sandbox's one import, `host.call(string, string) -> result<string, string>`, on a linker.

wasmtime-py's `LinkerInstance.add_func` wraps every call in a generic trampoline that rebuilds the
function's type from the C API on each call (the parameter and result types, a `ValType` object per
node, the variant tagging test on the way back): about a third of what a host call costs on the host.
The signature is fixed by runtime-wasm/wit/sandbox.wit, so this module registers its own trampoline
through the C API that `add_func` itself uses, converting the two strings in and the result out
directly. It relies on wasmtime-py's ctypes bindings (`wasmtime._ffi`), which are not public API:
the `wasmtime` pin in pyproject.toml covers them, and `define_host_call` falls back to `add_func`
when they are missing (a wasmtime-py that renamed them), trading the speed for compatibility.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from typing import Any

import wasmtime
from wasmtime.component import LinkerInstance, Variant

__all__ = ["HostFunction", "define_host_call", "fast_path_available"]

log = logging.getLogger("gateway.sandbox")

HostFunction = Callable[[object, str, str], Variant]
"""`(store, name, args_json) -> Variant("ok" | "err", str)`; raises only `wasmtime.WasmtimeError`, to trap."""

_fast_path = False
try:  # wasmtime-py's private ctypes bindings; the fallback below keeps a changed layout working
    from wasmtime import _ffi  # pyright: ignore[reportPrivateUsage]

    ffi: Any = _ffi  # untyped ctypes bindings
    _STRING: int = ffi.WASMTIME_COMPONENT_STRING.value
    _RESULT: int = ffi.WASMTIME_COMPONENT_RESULT.value
    _Val: Any = ffi.wasmtime_component_val_t
    _ByteVec: Any = ffi.wasm_byte_vec_t
    _val_new: Any = ffi.wasmtime_component_val_new
    _byte_vec_delete: Any = ffi.wasm_byte_vec_delete
    _add_func: Any = ffi.wasmtime_component_linker_instance_add_func
    _callback_type: Any = ffi.wasmtime_component_func_callback_t
    _finalizer_type: Any = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    # A function pointer of our own (indexing a CDLL does not cache it), so that its argument types can
    # take `bytes` directly instead of a copy into a ctypes array first.
    _byte_vec_new: Any = ffi.dll["wasm_byte_vec_new"]
    _byte_vec_new.restype = None
    _byte_vec_new.argtypes = [ctypes.POINTER(_ByteVec), ctypes.c_size_t, ctypes.c_char_p]
    _fast_path = True
except (ImportError, AttributeError):  # pragma: no cover - only with a wasmtime-py of another layout
    pass


def fast_path_available() -> bool:
    """Whether `define_host_call` registers its own trampoline (else wasmtime-py's generic one)."""
    return _fast_path


def _take_string(val: Any) -> str:
    """A string argument's text; frees its bytes, as wasmtime-py's own conversion does."""
    if val.kind != _STRING:
        raise TypeError("host.call takes two strings")
    vec = val.of.string
    text = ctypes.string_at(vec.data, vec.size).decode() if vec.size else ""
    _byte_vec_delete(ctypes.byref(vec))
    return text


def _new_string(text: str) -> Any:
    """A heap-allocated component string value, owned by wasmtime once handed over."""
    data = text.encode()
    val = _Val()
    val.kind = _STRING
    _byte_vec_new(ctypes.byref(val.of.string), len(data), data)
    return _val_new(ctypes.byref(val))


def _error_pointer(error: wasmtime.WasmtimeError) -> int | None:
    # What wasmtime-py's own trampoline returns: the error's pointer, handed over to wasmtime.
    return ctypes.cast(error._consume(), ctypes.c_void_p).value  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownArgumentType]


def _trampoline(function: HostFunction) -> Any:
    def call(_env: Any, _context: Any, _type: Any, args: Any, nargs: int, results: Any, nresults: int) -> Any:
        try:
            if nargs != 2 or nresults != 1:
                raise TypeError("host.call takes two strings and returns one result")
            answer = function(None, _take_string(args[0]), _take_string(args[1]))
            payload = answer.payload
            if answer.tag not in ("ok", "err") or not isinstance(payload, str):
                raise TypeError("host.call answers ok or err with a string")
            result = results[0]
            result.kind = _RESULT
            result.of.result.is_ok = answer.tag == "ok"
            result.of.result.val = _new_string(payload)
        except wasmtime.WasmtimeError as exc:
            return _error_pointer(exc)
        except BaseException as exc:
            # Nothing may escape a ctypes callback; the host function traps with a WasmtimeError itself,
            # so anything else is a bug here: the guest traps, and the log says why.
            log.error("host import trampoline failed", exc_info=exc)
            return _error_pointer(wasmtime.WasmtimeError("codemode: host import failed"))
        return 0

    return _callback_type(call)


_CALLBACKS: dict[HostFunction, Any] = {}
"""One C callback per host function, kept for the life of the process: every linker holding it
(each slot's) must never see it freed."""


def define_host_call(instance: LinkerInstance, name: str, function: HostFunction) -> None:
    """Define `name` on a linker instance as `function`, with the fixed `host.call` signature."""
    if not _fast_path:
        instance.add_func(name, function)
        return
    callback = _CALLBACKS.get(function)
    if callback is None:
        callback = _CALLBACKS[function] = _trampoline(function)
    encoded = name.encode()
    error = _add_func(
        instance.ptr(),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        ctypes.create_string_buffer(encoded),
        len(encoded),
        callback,
        None,
        _finalizer_type(0),  # nothing to free: the callback needs no per-definition data
    )
    if error:
        raise wasmtime.WasmtimeError._from_ptr(error)  # pyright: ignore[reportPrivateUsage]
