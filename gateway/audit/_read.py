"""Reading the audit log back: the log and its rotated files, oldest first, filtered, shown as a table.

The table shows every cell through `gateway.shared._display.printable`: a tool name a snippet chose cannot
add a row or move the terminal's cursor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from gateway.shared import format_table

__all__ = ["AuditRecords", "audit_files", "format_records", "read_audit", "select_records"]

_SHORT_ID_CHARS = 8  # of an execution id, in the table


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


def _record_time(record: Mapping[str, Any]) -> datetime | None:
    value = record.get("time")
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def select_records(
    records: Iterable[dict[str, Any]],
    *,
    since: datetime | None = None,
    tool: str | None = None,
    principal: str | None = None,
    issuer: str | None = None,
) -> list[dict[str, Any]]:
    """The records at or after `since`; with `tool` (a glob), only the tool calls it matches; with
    `principal` and `issuer`, only those of executions that principal (of that issuer) asked for."""
    selected: list[dict[str, Any]] = []
    for record in records:
        if principal is not None and record.get("principal") != principal:
            continue
        if issuer is not None and record.get("issuer") != issuer:
            continue
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


def issuers_of(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The issuers the records name (those of callers a token vouched for), sorted."""
    return sorted({str(record["issuer"]) for record in records if record.get("issuer") is not None})


def _cells(record: Mapping[str, Any]) -> tuple[str, ...]:
    kind = str(record.get("kind", "?"))
    caller = str(record.get("principal") or "-")  # none over stdio, or over HTTP without `auth`
    if kind == "suppressed":
        what = f"{record.get('records', '?')} records past the caller's budget, not written"
        return (str(record.get("time", "")), kind, caller, "", what, "counted", "-")
    if kind == "execution":
        what = f"sha256:{str(record.get('script_sha256', ''))[:12]}"
    elif kind == "reload":
        what = f"config ({record.get('trigger', '?')}): {record.get('outcome', '?')}"
        if record.get("reload") is not None:
            what += f" (reload {record['reload']})"
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
        caller,
        str(record.get("execution_id", ""))[:_SHORT_ID_CHARS],
        what,
        outcome,
        f"{ms:.1f}" if isinstance(ms, int | float) else "-",
    )


def format_records(records: Iterable[Mapping[str, Any]]) -> str:
    """A plain-text table: time, kind, caller (its principal), execution (short id), tool or script
    hash, outcome, ms."""
    header = ("time", "kind", "caller", "execution", "tool / script", "outcome", "ms")
    return format_table(header, (_cells(record) for record in records))
