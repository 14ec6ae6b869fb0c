"""The sandbox's limits: every one has a default, a config key and a place in error messages."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SandboxLimits"]

_KIB = 1024
_MIB = 1024 * 1024
_GIB = 1024 * _MIB


class SandboxLimits(BaseModel):
    """Per-execution limits (the config's `sandbox` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fuel: int = Field(
        default=20_000_000_000,
        ge=10_000_000,  # a trivial snippet uses 1-2 million: below this nothing runs
        le=10**15,  # about a day of CPython work; wasmtime counts fuel in 64 bits
        description="wasmtime fuel per execution; ~1e9 is ~0.1 s of CPython work here.",
    )
    timeout_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="Wall-clock budget per execution."
    )
    memory_bytes: int = Field(
        default=256 * _MIB,
        ge=64 * _MIB,
        le=4 * _GIB,  # a 32-bit wasm memory cannot grow past 4 GiB anyway
        description="Linear memory cap per execution.",
    )
    max_wasm_stack_bytes: int = Field(
        default=1 * _MIB,
        ge=256 * _KIB,
        # wasmtime runs wasm on a 2 MiB stack of its own and aborts the process past it.
        le=2 * _MIB,
        description="wasm call stack; deep recursion past it traps. At most 2 MiB (wasmtime's own).",
    )
    max_code_bytes: int = Field(
        default=256 * _KIB, ge=1024, le=16 * _MIB, description="Cap on the snippet's source."
    )
    # Together with a result's other fields, the three output caps keep a whole execute_code result
    # near 40,000 characters (about 10k tokens): Claude Code warns past 10k tokens of tool output,
    # cuts at 25k and moves results past 50,000 characters into a file.
    max_stdout_bytes: int = Field(
        default=20 * _KIB, ge=0, le=64 * _MIB, description="Cap on what the snippet prints."
    )
    max_stderr_bytes: int = Field(
        default=4 * _KIB, ge=0, le=64 * _MIB, description="Cap on what the snippet writes to stderr."
    )
    max_value_bytes: int = Field(
        default=8 * _KIB,
        ge=256,
        le=64 * _MIB,
        description="Cap on the last expression's JSON/repr (and on an error's message and traceback).",
    )
    max_tool_calls: int = Field(default=100, ge=0, description="Tool calls per execution.")
    max_tool_args_bytes: int = Field(default=256 * _KIB, ge=2, description="JSON arguments per tool call.")
    max_tool_result_bytes: int = Field(default=1 * _MIB, ge=2, description="JSON result per tool call.")
    max_shown_items: int = Field(
        default=8,
        ge=0,
        le=64,
        description="Images, audio and files per execution that reach the client as MCP content "
        "(show(...) and a Blob as the last expression).",
    )
    max_shown_bytes: int = Field(
        default=4 * _MIB,
        ge=0,
        le=64 * _MIB,
        description="Their bytes together, per execution (decoded, not base64).",
    )
    tool_call_timeout_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="Per tool call, also bounded by the remaining budget."
    )
    max_concurrent_executions: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Execution slots (one wasm engine each); more requests queue. With `auth`, one caller's "
        "runs hold at most all but one of them (one of one), its further runs waiting for its own share.",
    )
    max_queued_executions: int = Field(
        default=16,
        ge=0,
        le=10_000,
        description="Requests waiting for a slot, or for their caller's share of them.",
    )
    prewarm_instances: int = Field(
        default=2,
        ge=0,
        le=8,  # per slot; each one holds a few MiB of memory while it waits
        description="Fresh instances made ahead of demand, per slot (each is used once).",
    )
    pooling_allocator: bool = Field(
        default=True,
        description="Take instances from wasmtime's pooling allocator: fresh instances start faster and "
        "two executions at once slow each other less, for more idle memory (see "
        "pool_keep_resident_bytes). false: allocate on demand.",
    )
    pool_keep_resident_bytes: int = Field(
        default=0,
        ge=0,
        le=256 * _MIB,
        description="With the pooling allocator: bytes of each pooled memory kept resident, reset for "
        "the next instance instead of handed back to the kernel. 0 hands every page back: each run "
        "faults in the pages it touches and no idle memory is held or copied. 16777216 makes a run "
        "about 0.6 ms faster for about 100 MiB more per execution slot in use (docs/deploy.md, sizing).",
    )
