"""The audit log: one JSON line per execution and per tool call, append-only, written through per record.

Every record has `time` (ISO-8601 UTC, when it was written), `kind` and `execution_id`; a tool call's
record links to its execution's through that id (and is written first: calls end before their
execution does). The fields:

    execution  client {name, version} (when known), script_sha256, script (if include_script),
               limits (those in force), ok, error (type), error_category, fuel, ms, tool_calls (a count)
    tool_call  tool, arguments (redacted) or arguments_sha256 or neither, ok, error (class), ms,
               approval: not_required | approved | declined | unavailable

Each record is one `write` on a file opened for appending, so a crash of the gateway loses nothing
already recorded; `fsync` also survives a crash of the machine. Lines are ASCII (non-ASCII escaped).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from gateway._secrets import Redactor
from gateway.errors import ConfigError, ToolCallError
from gateway.sandbox import ExecutionResult, SandboxLimits

__all__ = [
    "Approval",
    "AuditConfig",
    "AuditLog",
    "AuditRecords",
    "audit_files",
    "format_records",
    "new_execution_id",
    "parse_since",
    "read_audit",
    "select_records",
]

Approval = Literal["not_required", "approved", "declined", "unavailable"]
ArgumentsMode = Literal["redacted", "hash", "omit"]

_MIB = 1024 * 1024
_SHORT_ID_CHARS = 8
# Gateway-wide settings, not limits on one execution.
_NOT_PER_EXECUTION = frozenset({"prewarm_instances", "max_concurrent_executions", "max_queued_executions"})


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
    fsync: bool = Field(
        default=False,
        description="fsync every record, to survive a machine crash too (~0.4 ms a record measured on ext4).",
    )

    def resolve_path(self, base_dir: Path) -> Path:
        """The log's path, a relative one taken from `base_dir` (the config file's directory)."""
        path = Path(self.path).expanduser()
        return path if path.is_absolute() else base_dir / path


def new_execution_id() -> str:
    """A fresh id linking an execution's record to its tool calls' records."""
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _error_class(error: BaseException | str | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    # A tool-call error's kind is the class the snippet saw (ToolError, ChildUnavailable, ...).
    return error.kind if isinstance(error, ToolCallError) else type(error).__name__


class AuditLog:
    """An append-only JSONL audit log, safe to write from the event loop and worker threads at once."""

    def __init__(
        self,
        path: Path,
        *,
        redactor: Redactor | None = None,
        include_script: bool = False,
        arguments: ArgumentsMode = "redacted",
        max_bytes: int = 10 * _MIB,
        backups: int = 3,
        fsync: bool = False,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self.include_script = include_script
        self.arguments = arguments
        self.max_bytes = max_bytes
        self.backups = backups
        self.fsync = fsync
        self._clock = clock
        self._lock = threading.Lock()
        self._needs_newline = False  # the file ends in a torn line (a crash mid-write, a full disk)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = self._open(truncate=False)
        except OSError as exc:
            raise ConfigError(f"cannot open the audit log {path}: {exc.strerror or exc}") from None

    @classmethod
    def from_config(cls, config: AuditConfig, base_dir: Path, redactor: Redactor | None = None) -> AuditLog:
        """Open the log an `audit` config section describes."""
        return cls(
            config.resolve_path(base_dir),
            redactor=redactor,
            include_script=config.include_script,
            arguments=config.arguments,
            max_bytes=config.max_bytes,
            backups=config.backups,
            fsync=config.fsync,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file; later records raise ValueError."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def execution(
        self,
        execution_id: str,
        script: str,
        result: ExecutionResult,
        *,
        limits: SandboxLimits | None = None,
        timeout: float | None = None,
        client_name: str | None = None,
        client_version: str | None = None,
    ) -> None:
        """Record one finished execution; `timeout` is its wall budget if not `limits.timeout_seconds`."""
        redact = self.redactor.redact
        record: dict[str, Any] = {"time": None, "kind": "execution", "execution_id": execution_id}
        if client_name is not None:
            record["client"] = {"name": redact(client_name), "version": redact(client_version or "") or None}
        record["script_sha256"] = _sha256(script)
        if self.include_script:
            record["script"] = redact(script)
        if limits is not None:
            in_force = limits.model_dump(exclude=set(_NOT_PER_EXECUTION))
            if timeout is not None:
                in_force["timeout_seconds"] = timeout
            record["limits"] = in_force
        error = result.error
        record |= {
            "ok": result.ok,
            "error": redact(error.type) if error is not None else None,
            "error_category": error.category if error is not None else None,
            "fuel": result.fuel,
            "ms": result.ms,
            "tool_calls": len(result.tool_calls),
        }
        self.write(record)

    def tool_call(
        self,
        execution_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        ms: float,
        error: BaseException | str | None = None,
        approval: Approval = "not_required",
    ) -> None:
        """Record one tool call; `error` is what failed it (an exception or its class name), if anything."""
        record: dict[str, Any] = {
            "time": None,
            "kind": "tool_call",
            "execution_id": execution_id,
            "tool": self.redactor.redact(tool),
        }
        if self.arguments == "redacted":
            record["arguments"] = self.redactor.redact_json(dict(arguments))
        elif self.arguments == "hash":
            canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
            record["arguments_sha256"] = _sha256(canonical)
        failure = _error_class(error)
        record |= {
            "ok": failure is None,
            "error": self.redactor.redact(failure) if failure is not None else None,
            "ms": round(ms, 3),
            "approval": approval,
        }
        self.write(record)

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line (stamping `time` if it is missing or None); raises OSError."""
        stamped = dict(record)
        if stamped.get("time") is None:
            stamped["time"] = _timestamp(self._clock())
        line = json.dumps(stamped, separators=(",", ":"), default=str) + "\n"  # ASCII: escapes the rest
        data = line.encode("ascii")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"the audit log {self.path} is closed")
            if self._size > 0 and self._size + len(data) > self.max_bytes:
                self._rotate()
            if self._needs_newline:
                data = b"\n" + data
            try:
                self._write_all(data)
            except OSError:
                self._needs_newline = True  # how much of the line reached the file is unknown
                raise
            self._needs_newline = False
            if self.fsync:
                os.fsync(self._fd)

    def _write_all(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            self._size += written
            view = view[written:]

    def _open(self, *, truncate: bool) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
        if truncate:
            flags |= os.O_TRUNC
        fd = os.open(self.path, flags, 0o600)  # the log may hold scripts and arguments: owner only
        self._size = os.fstat(fd).st_size
        if self._size > 0:
            with self.path.open("rb") as existing:
                existing.seek(-1, os.SEEK_END)
                self._needs_newline = existing.read(1) != b"\n"
        return fd

    def _backup(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        if self.backups > 0:
            for index in range(self.backups - 1, 0, -1):
                if self._backup(index).exists():
                    os.replace(self._backup(index), self._backup(index + 1))
            os.replace(self.path, self._backup(1))
        self._fd = self._open(truncate=self.backups == 0)


# ---- reading it back (the `audit` command) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditRecords:
    """The records of a log and its rotated files, oldest first, and how many lines were unreadable."""

    records: list[dict[str, Any]]
    malformed: int


def audit_files(path: Path) -> list[Path]:
    """The log's rotated files, oldest first, then the log itself: those that exist."""
    pattern = re.compile(re.escape(path.name) + r"\.(\d+)")
    backups: list[tuple[int, Path]] = []
    if path.parent.is_dir():
        for candidate in path.parent.iterdir():
            if (match := pattern.fullmatch(candidate.name)) is not None:
                backups.append((int(match.group(1)), candidate))
    ordered = [file for _, file in sorted(backups, reverse=True)]
    return [*ordered, path] if path.exists() else ordered


def read_audit(path: Path) -> AuditRecords:
    """Every record of the log and its rotated files, oldest first."""
    records: list[dict[str, Any]] = []
    malformed = 0
    for file in audit_files(path):
        for raw in file.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:  # a line torn by a crash
                malformed += 1
                continue
            if isinstance(record, dict):
                records.append(record)  # pyright: ignore[reportUnknownArgumentType]
            else:
                malformed += 1
    return AuditRecords(records, malformed)


_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: an ISO time (UTC unless it says otherwise) or an age such as 30m, 1h, 2d."""
    text = text.strip()
    if (age := _AGE.fullmatch(text)) is not None:
        delta = timedelta(**{_AGE_UNITS[age.group(2)]: float(age.group(1))})
        return (now or _now()) - delta
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"--since {text!r}: give an ISO time (2026-05-01T12:00Z) or an age (30m, 1h, 2d)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _record_time(record: Mapping[str, Any]) -> datetime | None:
    value = record.get("time")
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def select_records(
    records: Iterable[dict[str, Any]], *, since: datetime | None = None, tool: str | None = None
) -> list[dict[str, Any]]:
    """The records at or after `since`; with `tool` (a glob), only the tool calls it matches."""
    selected: list[dict[str, Any]] = []
    for record in records:
        if since is not None:
            moment = _record_time(record)
            if moment is None or moment < since:
                continue
        if tool is not None:
            name = record.get("tool")
            if record.get("kind") != "tool_call" or not isinstance(name, str) or not fnmatchcase(name, tool):
                continue
        selected.append(record)
    return selected


def _cells(record: Mapping[str, Any]) -> tuple[str, ...]:
    kind = str(record.get("kind", "?"))
    if kind == "execution":
        what = f"sha256:{str(record.get('script_sha256', ''))[:12]}"
    else:
        what = str(record.get("tool", ""))
    outcome = "ok" if record.get("ok") else str(record.get("error") or "error")
    approval = record.get("approval")
    if approval not in (None, "not_required"):
        outcome += f" ({approval})"
    ms = record.get("ms")
    return (
        str(record.get("time", "")),
        kind,
        str(record.get("execution_id", ""))[:_SHORT_ID_CHARS],
        what,
        outcome,
        f"{ms:.1f}" if isinstance(ms, int | float) else "-",
    )


def format_records(records: Iterable[Mapping[str, Any]]) -> str:
    """A plain-text table: time, kind, execution (short id), tool or script hash, outcome, ms."""
    header = ("time", "kind", "execution", "tool / script", "outcome", "ms")
    rows = [header, *(_cells(record) for record in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)
