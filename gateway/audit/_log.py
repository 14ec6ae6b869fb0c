"""The audit log: one JSON line per execution and per tool call, append-only, written through per record.

Every record has `time` (ISO-8601 UTC, when it was written), `kind` and `execution_id`; a tool call's
record links to its execution's through that id (and is written first: calls end before their
execution does). The fields:

    execution  client {name, version} (when known), script_sha256, script (if include_script),
               limits (those in force), ok, error (type), error_category, fuel, ms, tool_calls (a count),
               round (from 2 on: a run resumed after an approval, under the same execution_id)
    tool_call  tool (at most 256 characters), arguments (redacted) or arguments_sha256 and
               arguments_bytes (past max_argument_bytes, or for a name that resolved to no tool) or
               neither, ok, error (class), ms,
               approval: not_required | approved | declined | unavailable | pending
               middleware (its import path), when a middleware refused or failed the call
    suppressed (no execution_id) principal and issuer (if any), records and bytes not written,
               kinds {kind: count}, since: the start of the window in which that caller's records
               passed principal_budget_bytes, budget_bytes
    reload     (no execution_id) trigger: signal | file | cli, requested_by {pid, user} (cli), attempt
               (every reload's number since start), reload (the number of the applied reload it made, as
               search_docs names it; null if refused or unchanged), outcome: applied | unchanged |
               refused, ok, error, config_file,
               servers {added, removed, changed}, sections (the top-level keys that changed),
               restart_needed (those of them that apply only after a restart), errors (refused)

A run that pauses for approval (MCP 2026-07-28) is recorded once per round: the paused round ends
with error ApprovalRequired (category pending), and its paused call with approval pending. A resumed
round replays the earlier calls' results without calling anything, so they are not recorded again.

One caller's volume never rotates everyone's history out: each principal of one issuer
(unauthenticated callers count as one) writes at most `principal_budget_bytes` of records per
window; past it, its records are counted and summarised as one `suppressed` record when the window
ends (or the log closes).

Each record is one `write` on a file opened for appending, so a crash of the gateway loses nothing
already recorded; `fsync` also survives a crash of the machine. Lines are ASCII (non-ASCII escaped).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from gateway.audit.config import ArgumentsMode, AuditConfig
from gateway.auth import STATIC_ISSUER, Owner
from gateway.errors import ConfigError, ToolCallError
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from gateway.shared import Redactor

__all__ = ["Approval", "AuditLog", "Caller", "check_audit_log", "new_execution_id"]

log = logging.getLogger("gateway.audit")

Approval = Literal["not_required", "approved", "declined", "unavailable", "pending"]

_MIB = 1024 * 1024
MAX_TOOL_CHARS = 256
"""Of a tool's name, what a record keeps: a snippet's names are capped so, but a record never trusts it."""
# Gateway-wide settings, not limits on one execution.
_NOT_PER_EXECUTION = frozenset(
    {
        "prewarm_instances",
        "max_concurrent_executions",
        "max_queued_executions",
        "pooling_allocator",
        "pool_keep_resident_bytes",
    }
)


def new_execution_id() -> str:
    """A fresh id linking an execution's record to its tool calls' records."""
    return uuid.uuid4().hex


def check_audit_log(config: AuditConfig, base_dir: Path) -> None:
    """Raise the ConfigError opening the log `config` describes would, as far as the file system tells
    without opening or creating anything: for `check`, and a gateway about to answer a handshake."""
    path = config.resolve_path(base_dir)
    try:
        _check_openable(path)
    except OSError as exc:
        raise _unopenable(path, exc) from None


def _check_openable(path: Path) -> None:
    """Raise the OSError that creating the log's directories and opening it for appending would:
    a symlink, a directory, a file where a directory should be, or no permission to write."""
    if path.is_symlink():  # opened with O_NOFOLLOW
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    existing = path
    while not existing.exists():  # opening creates what is missing below the nearest existing ancestor
        existing = existing.parent
    if existing == path and path.is_dir():
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
    if existing != path and not existing.is_dir():
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    needed = os.W_OK if existing == path else os.W_OK | os.X_OK
    if not os.access(existing, needed, effective_ids=os.access in os.supports_effective_ids):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))


def _unopenable(path: Path, error: OSError) -> ConfigError:
    return ConfigError(
        f"cannot open the audit log {path}: {error.strerror or error}; set audit.path to a file the "
        "gateway can create or append to"
    )


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


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asked for an execution, as its records (and those of its tool calls) name them."""

    principal: str | None = None
    """The authenticated HTTP caller; None over stdio or HTTP without `auth`."""
    issuer: str | None = None
    """Who vouched for the principal: a JWT's `iss`, or the static tokens' own issuer."""
    roles: tuple[str, ...] = ()
    """The `policy.roles` that named the principal."""
    oauth_client: str | None = None
    """The OAuth client acting for the principal (a JWT's `client_id` or `azp`)."""
    client_name: str | None = None
    """The MCP client, as it named itself (`clientInfo`)."""
    client_version: str | None = None

    @property
    def owner(self) -> Owner | None:
        """The key of this caller's per-caller windows: its principal of its issuer; None if unknown."""
        if self.principal is None:
            return None
        return Owner(self.issuer or STATIC_ISSUER, self.principal)

    def fields(self, redact: Callable[[str], str]) -> dict[str, Any]:
        """The record's fields for what is known of the caller."""
        found: dict[str, Any] = {}
        if self.principal is not None:
            found["principal"] = redact(self.principal)
        if self.issuer is not None:
            found["issuer"] = redact(self.issuer)
        if self.roles:
            found["roles"] = [redact(role) for role in self.roles]
        if self.oauth_client is not None:
            found["oauth_client"] = redact(self.oauth_client)
        if self.client_name is not None:
            found["client"] = {
                "name": redact(self.client_name),
                "version": redact(self.client_version or "") or None,
            }
        return found


NO_CALLER = Caller()


@dataclass
class _Window:
    """One caller's records in the current budget window: written, and counted past the budget."""

    started: datetime
    written: int = 0
    suppressed: int = 0
    suppressed_bytes: int = 0
    kinds: dict[str, int] = field(default_factory=dict[str, int])

    def summary(self, caller: tuple[str | None, str | None], budget: int) -> dict[str, Any]:
        """The `suppressed` record for this window of `caller` (its issuer and principal)."""
        issuer, principal = caller
        record: dict[str, Any] = {"time": None, "kind": "suppressed"}
        if principal is not None:
            record["principal"] = principal
        if issuer is not None:
            record["issuer"] = issuer
        return record | {
            "records": self.suppressed,
            "bytes": self.suppressed_bytes,
            "kinds": dict(self.kinds),
            "since": _timestamp(self.started),
            "budget_bytes": budget,
        }


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
        max_argument_bytes: int = 2_048,
        principal_budget_bytes: int = 4 * _MIB,
        principal_budget_seconds: float = 3600.0,
    ) -> None:
        self.path = path
        self.max_argument_bytes = max_argument_bytes
        self.principal_budget_bytes = principal_budget_bytes
        self.principal_budget = timedelta(seconds=principal_budget_seconds)
        self._windows: dict[tuple[str | None, str | None], _Window] = {}
        self.redactor = redactor or Redactor()
        self.include_script = include_script
        self.arguments = arguments
        self.max_bytes = max_bytes
        self.backups = backups
        self.fsync = fsync
        self._clock = clock
        self._lock = threading.Lock()
        self._needs_newline = False  # the file ends in a torn line (a crash mid-write, a full disk)
        self._closed = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = self._open(truncate=False)
        except OSError as exc:
            raise _unopenable(path, exc) from None

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
            max_argument_bytes=config.max_argument_bytes,
            principal_budget_bytes=config.principal_budget_bytes,
            principal_budget_seconds=config.principal_budget_seconds,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file, after the summaries of suppressed records; later records raise ValueError."""
        with self._lock:
            if self._closed:
                return
            try:
                self._end_windows(None)
            finally:
                self._closed = True
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
        tool_calls: int | None = None,
        round_number: int = 1,
        caller: Caller = NO_CALLER,
    ) -> None:
        """Record one finished execution; `timeout` is its wall budget if not `limits.timeout_seconds`,
        `tool_calls` how many it made if its result does not list them (it was cancelled), `round_number`
        which round of a run paused for approval this was, `caller` who asked for it."""
        redact = self.redactor.redact
        record: dict[str, Any] = {"time": None, "kind": "execution", "execution_id": execution_id}
        record |= caller.fields(redact)
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
            "tool_calls": len(result.tool_calls) if tool_calls is None else tool_calls,
        }
        if round_number > 1:
            record["round"] = round_number
        self._write_budgeted(record)

    def tool_call(
        self,
        execution_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        ms: float,
        error: BaseException | str | None = None,
        approval: Approval = "not_required",
        caller: Caller = NO_CALLER,
        middleware: str | None = None,
        resolved: bool = True,
    ) -> None:
        """Record one tool call; `error` is what failed it (an exception or its class name), if anything;
        `caller` who asked for its execution; `middleware` the one that refused or failed it; `resolved`
        False for a name that resolved to no tool, whose arguments only a digest records."""
        record: dict[str, Any] = {
            "time": None,
            "kind": "tool_call",
            "execution_id": execution_id,
            "tool": self.redactor.redact(tool[:MAX_TOOL_CHARS]),
        }
        record |= caller.fields(self.redactor.redact)
        record |= self._arguments_fields(arguments, resolved)
        failure = _error_class(error)
        record |= {
            "ok": failure is None,
            "error": self.redactor.redact(failure) if failure is not None else None,
            "ms": round(ms, 3),
            "approval": approval,
        }
        if middleware is not None:
            record["middleware"] = self.redactor.redact(middleware)
        self._write_budgeted(record)

    def _arguments_fields(self, arguments: Mapping[str, Any], resolved: bool) -> dict[str, Any]:
        """What a tool call's record keeps of its arguments: the redacted JSON if it is small, else
        (and for a name that resolved to no tool, and in `hash` mode) its digest and size."""
        if self.arguments == "omit":
            return {}
        if self.arguments == "redacted" and resolved:
            redacted = self.redactor.redact_json(dict(arguments))
            if len(json.dumps(redacted, separators=(",", ":"), default=str)) <= self.max_argument_bytes:
                return {"arguments": redacted}
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
        digest: dict[str, Any] = {"arguments_sha256": _sha256(canonical)}
        return digest if self.arguments == "hash" else digest | {"arguments_bytes": len(canonical)}

    def config_reload(
        self,
        *,
        trigger: str,
        attempt: int,
        reload: int | None,
        outcome: Literal["applied", "unchanged", "refused"],
        config_file: Path | None,
        servers: Mapping[str, list[str]],
        sections: list[str],
        restart_needed: list[str],
        errors: list[str],
        requested_by: Mapping[str, Any] | None = None,
        privileged: list[str] | None = None,
    ) -> None:
        """Record one config reload: what triggered it, what changed, and whether it was applied."""
        redact = self.redactor.redact
        record: dict[str, Any] = {"time": None, "kind": "reload", "trigger": trigger}
        if requested_by is not None:
            record["requested_by"] = self.redactor.redact_json(dict(requested_by))
        record |= {
            "attempt": attempt,
            "reload": reload,
            "outcome": outcome,
            "ok": outcome != "refused",
            "error": "ConfigError" if outcome == "refused" else None,
            "config_file": redact(str(config_file)) if config_file is not None else None,
            "servers": {key: [redact(name) for name in names] for key, names in servers.items()},
            "sections": sections,
            "restart_needed": restart_needed,
            "privileged": [redact(change) for change in privileged or []],
            "errors": [redact(error) for error in errors],
        }
        self.write(record)

    def record(self, write: Callable[[AuditLog], None]) -> None:
        """Run one of the writers above; a failed write (a full disk) is logged loudly, never raised."""
        try:
            write(self)
        except OSError:  # the gateway keeps serving; the operator sees it in the log
            log.exception("cannot write the audit log", extra={"path": str(self.path)})

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line (stamping `time` if it is missing or None); raises OSError."""
        data = self._line(record)
        with self._lock:
            self._append(data)

    def _write_budgeted(self, record: Mapping[str, Any]) -> None:
        """Append a caller's record within its budget; past it, count it instead. A caller is a principal
        of one issuer: a JWT whose `sub` is a static token's name must not spend that caller's budget."""
        data = self._line(record)
        principal: str | None = record.get("principal")
        caller: tuple[str | None, str | None] = (record.get("issuer"), principal)
        with self._lock:
            now = self._clock()
            self._end_windows(now)
            window = self._windows.setdefault(caller, _Window(now))
            budget = self.principal_budget_bytes
            if budget and window.written + len(data) > budget:
                if not window.suppressed:
                    log.warning(
                        "a caller passed the audit budget: its records are counted, not written, until "
                        "the window ends (audit.principal_budget_bytes)",
                        extra={"principal": principal, "issuer": caller[0], "budget_bytes": budget},
                    )
                window.suppressed += 1
                window.suppressed_bytes += len(data)
                kind = str(record.get("kind"))
                window.kinds[kind] = window.kinds.get(kind, 0) + 1
                return
            window.written += len(data)
            self._append(data)

    def _end_windows(self, now: datetime | None) -> None:
        """Write the summary of each budget window that ended by `now` (every window if None)."""
        for caller, window in list(self._windows.items()):
            if now is not None and now - window.started < self.principal_budget:
                continue
            del self._windows[caller]
            if window.suppressed:
                self._append(self._line(window.summary(caller, self.principal_budget_bytes)))

    def _line(self, record: Mapping[str, Any]) -> bytes:
        stamped = dict(record)
        if stamped.get("time") is None:
            stamped["time"] = _timestamp(self._clock())
        line = json.dumps(stamped, separators=(",", ":"), default=str) + "\n"  # ASCII: escapes the rest
        return line.encode("ascii")

    def _append(self, data: bytes) -> None:
        """Write one line, rotating first if it would pass max_bytes; the lock is held."""
        if self._closed:
            raise ValueError(f"the audit log {self.path} is closed")
        if self._fd is None:  # its reopen failed (a symlink planted there, a full disk): try again
            self._fd = self._open(truncate=False)
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
        # Never through a symlink: one planted where the log is (a child that can write there) would
        # send the records, which quote a snippet's arguments, into a file of the attacker's choosing.
        flags = (
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        )
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
