"""The config's `audit` section: where and how executions and tool calls are recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ArgumentsMode", "AuditConfig"]

ArgumentsMode = Literal["redacted", "hash", "omit"]

_MIB = 1024 * 1024


class AuditConfig(BaseModel):
    """Where and how the gateway records executions and tool calls (the config's `audit` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Audit log")

    path: str = Field(
        default="audit.jsonl",
        min_length=1,
        description="JSON Lines file; a relative path is relative to the config file's directory.",
    )
    include_script: bool = Field(
        default=False, description="Record each snippet's source (redacted), not only its sha256."
    )
    arguments: ArgumentsMode = Field(
        default="redacted",
        description="Tool-call arguments: as JSON with secrets redacted, only their sha256, or not at all.",
    )
    max_bytes: int = Field(
        default=10 * _MIB, ge=4096, description="Rotate the file before it grows past this many bytes."
    )
    backups: int = Field(
        default=3,
        ge=0,
        le=1000,
        description="Rotated files kept (audit.jsonl.1 is the newest); 0 truncates the file at the cap.",
    )
    max_argument_bytes: int = Field(
        default=2_048,
        ge=0,
        description="A tool call's arguments as a record would hold them (redacted JSON, non-ASCII "
        "escaped), at most; larger ones are recorded as arguments_sha256 and arguments_bytes instead.",
    )
    principal_budget_bytes: int = Field(
        default=4 * _MIB,
        ge=0,
        description="Bytes of records one caller (a principal of one issuer; all unauthenticated callers "
        "count as one) may write per principal_budget_seconds; past it, that caller's records are "
        "counted, not written, and one `suppressed` record says how many when the window ends. 0 writes "
        "every record: retention is then max_bytes times backups+1 whatever one caller sends.",
    )
    principal_budget_seconds: float = Field(
        default=3600.0, gt=0, description="The window principal_budget_bytes is counted over, in seconds."
    )
    fsync: bool = Field(
        default=False,
        description="fsync every record, to survive a machine crash too; each write then waits for the disk.",
    )

    def resolve_path(self, base_dir: Path) -> Path:
        """The log's path, a relative one taken from `base_dir` (the config file's directory)."""
        path = Path(self.path).expanduser()
        return path if path.is_absolute() else base_dir / path
