"""Wasmtime trap messages translated into the gateway's errors, each naming its limit or capability."""

from __future__ import annotations

import pytest

from gateway.errors import (
    CapabilityDenied,
    ExecutionFailed,
    FuelExhausted,
    GuestCrashed,
    MemoryLimitExceeded,
    StackExhausted,
    WallTimeExceeded,
)
from gateway.sandbox._traps import memory_limit_error, translate_trap
from gateway.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(fuel=70_000_000, memory_bytes=96 * 1024 * 1024, max_wasm_stack_bytes=512 * 1024)
TIMEOUT = 2.5


def translate(message: str) -> ExecutionFailed:
    return translate_trap(message, LIMITS, TIMEOUT)


@pytest.mark.parametrize(
    ("message", "error_class", "named"),
    [
        ("all fuel consumed by WebAssembly", FuelExhausted, ["70,000,000", "sandbox.fuel"]),
        ("wasm trap: Out of fuel", FuelExhausted, ["70,000,000", "sandbox.fuel"]),
        ("wasm trap: interrupt", WallTimeExceeded, ["2.5 s", "sandbox.timeout_seconds"]),
        ("wasm trap: call stack exhausted", StackExhausted, ["524,288", "sandbox.max_wasm_stack_bytes"]),
        ("thread 'main' has overflowed its stack: stack overflow", StackExhausted, ["524,288"]),
        ("failed to grow memory by 65536", MemoryLimitExceeded, ["100,663,296", "sandbox.memory_bytes"]),
        ("memory allocation of 4096 bytes failed", MemoryLimitExceeded, ["sandbox.memory_bytes"]),
        ("Memory limit exceeded", MemoryLimitExceeded, ["100,663,296"]),
    ],
)
def test_each_limit_trap_becomes_its_error_naming_the_limit_and_its_config_key(
    message: str, error_class: type[ExecutionFailed], named: list[str]
) -> None:
    error = translate(message)
    assert type(error) is error_class
    for text in named:
        assert text in str(error)


def test_the_memory_limit_error_names_the_configured_bytes() -> None:
    error = memory_limit_error(LIMITS)
    assert isinstance(error, MemoryLimitExceeded)
    assert "100,663,296 bytes (sandbox.memory_bytes)" in str(error)


def test_a_runtime_panic_is_a_crash_of_the_boundary_not_a_denied_capability() -> None:
    # The backtrace of a panic passes through stubs too; the panic decides.
    error = translate("wasm trap: panicking in rust_begin_unwind\n  at wasi:random/random#get-random-bytes")
    assert type(error) is GuestCrashed
    assert "could not cross the sandbox boundary" in str(error)


@pytest.mark.parametrize(
    ("message", "capability"),
    [
        ("wasm backtrace:\n 0: wasi:sockets/tcp#connect", "network"),
        ("wasm backtrace:\n 0: wasi:random/random#get-random-bytes", "entropy"),
        ("wasm backtrace:\n 0: wasi:filesystem/preopens#get-directories", "filesystem"),
        ("wasm backtrace:\n 0: wasi:clocks/wall_clock#now", "clock"),
        ("wasm backtrace:\n 0: wasi:cli/stdin#get-stdin", "console"),
        ("wasm backtrace:\n 0: wasi:cli/environment#get-environment", "environment"),
        ("wasm backtrace:\n 0: __wasi_proc_exit", "processes"),
    ],
)
def test_a_stub_in_the_backtrace_names_the_denied_capability(message: str, capability: str) -> None:
    error = translate(message)
    assert type(error) is CapabilityDenied
    assert f"the sandbox has no {capability}:" in str(error)


def test_the_earliest_capability_marker_in_the_message_decides() -> None:
    random_first = translate("0: wasi:random/random#get-random-bytes\n1: wasi:filesystem/types#read")
    filesystem_first = translate("0: wasi:filesystem/types#read\n1: wasi:random/random#get-random-bytes")
    assert "no entropy" in str(random_first)
    assert "random, secrets or uuid" in str(random_first)
    assert "no filesystem" in str(filesystem_first)


def test_a_limit_wins_over_a_capability_marker_in_the_same_message() -> None:
    error = translate("all fuel consumed by WebAssembly\n 0: wasi:random/random#get-random-bytes")
    assert type(error) is FuelExhausted


def test_an_unknown_trap_is_a_crash_quoting_only_its_first_line_cut_short() -> None:
    first = "wasm trap: out of bounds memory access " + "x" * 500
    error = translate(f"  {first}\nsecond line of the backtrace\n")
    assert type(error) is GuestCrashed
    text = str(error)
    assert first[:200] in text
    assert first[:201] not in text
    assert "second line" not in text
    assert "the gateway is fine" in text


def test_an_empty_trap_message_is_a_crash_of_an_unknown_trap() -> None:
    error = translate("   \n")
    assert type(error) is GuestCrashed
    assert "(unknown trap)" in str(error)
