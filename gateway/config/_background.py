"""The config's `background` section: executions that outlive the request that started them.

The server wing runs them (`gateway/server/_background.py`), but the model lives here, as `http`'s
does: the server sits above the config in the layers.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BackgroundConfig"]

_MIB = 1024 * 1024


class BackgroundConfig(BaseModel):
    """Background executions (`execute_code` as an MCP task, or with `background: true`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=True,
        description="Whether execute_code may run in the background; off, a task request runs inline.",
    )
    timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        le=86_400,
        description="Wall-clock budget of one background execution (instead of sandbox.timeout_seconds).",
    )
    fuel: int = Field(
        default=200_000_000_000,
        ge=10_000_000,
        le=10**15,
        description="wasmtime fuel of one background execution (instead of sandbox.fuel).",
    )
    max_running: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Background executions running at once, from every caller; each holds an execution "
        "slot (sandbox.max_concurrent_executions) while it runs, so keep this below that.",
    )
    max_running_per_caller: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Background executions running at once for one caller: a principal of one issuer "
        "with `auth`; without it, a handshake-era session or a client address.",
    )
    keep_seconds: float = Field(
        default=900.0,
        gt=0,
        le=7 * 86_400,
        description="How long a finished background execution's result is kept for collection; "
        "after that its id is unknown.",
    )
    max_kept: int = Field(
        default=100,
        ge=1,
        le=10_000,
        description="Background executions kept at most, running or finished, from every caller; past it "
        "a new one is refused until the oldest result expires (another caller's are never dropped).",
    )
    max_kept_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Background executions kept for one caller, running or finished; past it a new one "
        "drops that caller's own oldest result. Default: a tenth of max_kept, at least 1.",
    )
    max_kept_bytes: int = Field(
        default=128 * _MIB,
        ge=64 * 1024,
        le=64 * 1024 * _MIB,
        description="Bytes that finished results hold, from every caller (text, and what runs showed as "
        "base64); a result past it is not kept, and collecting it says so.",
    )
    max_kept_bytes_per_caller: int = Field(
        default=32 * _MIB,
        ge=64 * 1024,
        le=64 * 1024 * _MIB,
        description="Bytes that one caller's finished results hold; a new one drops that caller's own "
        "oldest results to fit, and one larger than this alone is not kept.",
    )

    keep_on_disk: bool = Field(
        default=True,
        description="Without `state`: write finished runs (status and result) to a SQLite file in the "
        "cache directory, readable by the gateway's user only, so collect and tasks/result answer after "
        "a restart. Off, results live in memory and a restart loses them.",
    )
    lease_seconds: float = Field(
        default=30.0,
        ge=0.5,
        le=3600,
        description="With `state`: how long the replica running a background run holds it without "
        "renewing (it renews every third of this). Once the lease lapses, the run is reported ended "
        "because its replica stopped.",
    )

    def kept_per_caller(self) -> int:
        """The executions one caller may keep: `max_kept_per_caller`, else a tenth of `max_kept`."""
        share = self.max_kept_per_caller or max(1, self.max_kept // 10)
        return min(share, self.max_kept)

    def kept_bytes_per_caller(self) -> int:
        """The bytes one caller's results may hold, never more than all of them may."""
        return min(self.max_kept_bytes_per_caller, self.max_kept_bytes)
