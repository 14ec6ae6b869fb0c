"""Translate what wasmtime raises into the gateway's errors: once, here, at the boundary."""

from __future__ import annotations

from gateway.errors import (
    CapabilityDenied,
    ExecutionFailed,
    FuelExhausted,
    GuestCrashed,
    MemoryLimitExceeded,
    StackExhausted,
    WallTimeExceeded,
)
from gateway.sandbox.limits import SandboxLimits

__all__ = ["memory_limit_error", "translate_trap"]

# Which WASI stub a trap's backtrace passed through tells which capability the snippet reached.
_STUB_MARKERS: tuple[tuple[str, str, str], ...] = (
    ("wall_clock", "clock", "read the clock through time.time() / datetime.now(), which the host serves"),
    ("monotonic_clock", "clock", "read the clock through time.monotonic(), which the host serves"),
    ("sockets", "network", "reach outside services through tool calls"),
    ("socket", "network", "reach outside services through tool calls"),
    ("random", "entropy", "use the random, secrets or uuid modules, which the host seeds"),
    ("filesystem", "filesystem", "pass data in through tool calls or literals"),
    ("preopens", "filesystem", "pass data in through tool calls or literals"),
    ("stdout", "console", "print() is captured; do not write to sys.__stdout__ directly"),
    ("stderr", "console", "print() is captured; do not write to sys.__stderr__ directly"),
    ("stdin", "console", "the sandbox has no stdin; pass data in through tool calls or literals"),
    ("environment", "environment", "the sandbox has no environment variables"),
    ("proc_exit", "processes", "end the snippet by returning, not by exiting the process"),
    ("exit", "processes", "end the snippet by returning, not by exiting the process"),
)


def _denied_capability(message: str) -> tuple[str, str] | None:
    # The first frames of a backtrace are the stub itself; the libc frame that called it names it.
    lowered = message.lower()
    hits = [
        (lowered.find(marker), capability, advice)
        for marker, capability, advice in _STUB_MARKERS
        if marker in lowered
    ]
    if not hits:
        return None
    _, capability, advice = min(hits)
    return capability, advice


def memory_limit_error(limits: SandboxLimits) -> MemoryLimitExceeded:
    """The error for a snippet that needed more linear memory than its limit."""
    return MemoryLimitExceeded(
        f"memory limit reached: the snippet needed more than {limits.memory_bytes:,} bytes "
        "(sandbox.memory_bytes); process data in smaller pieces"
    )


def translate_trap(message: str, limits: SandboxLimits, timeout: float) -> ExecutionFailed:
    """Map a wasmtime trap message to the gateway error that names the limit or capability."""
    lowered = message.lower()
    if "all fuel consumed" in lowered or "out of fuel" in lowered:
        return FuelExhausted(
            f"CPU limit reached: the snippet used all {limits.fuel:,} units of fuel (sandbox.fuel); "
            "do less work per execution"
        )
    if "interrupt" in lowered:
        return WallTimeExceeded(
            f"wall-clock limit reached: the snippet ran for more than {timeout:g} s (sandbox.timeout_seconds)"
        )
    if "call stack exhausted" in lowered or "stack overflow" in lowered:
        return StackExhausted(
            "stack limit reached: recursion went deeper than the "
            f"{limits.max_wasm_stack_bytes:,}-byte wasm stack "
            "allows (sandbox.max_wasm_stack_bytes); use iteration or less nesting"
        )
    if "memory" in lowered and ("grow" in lowered or "limit" in lowered or "allocation" in lowered):
        return memory_limit_error(limits)
    if "panicking" in lowered or "rust_begin_unwind" in lowered:
        # The guest runtime aborts when a value cannot be lowered across the boundary (a wrong type
        # passed to the host import by hand, say): a crash of that run, not a capability it reached.
        return GuestCrashed(
            "the sandbox runtime aborted: a value could not cross the sandbox boundary "
            "(call tools through `tools.<server>.<tool>(...)`, not the raw host import)"
        )
    denied = _denied_capability(message)
    if denied is not None:
        capability, advice = denied
        return CapabilityDenied(
            f"the sandbox has no {capability}: the snippet reached a disabled capability; {advice}"
        )
    first_line = message.strip().splitlines()[0] if message.strip() else "unknown trap"
    return GuestCrashed(
        f"the sandbox crashed ({first_line[:200]}); the gateway is fine, try again or simplify"
    )
