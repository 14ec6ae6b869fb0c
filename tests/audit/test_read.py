"""Reading the audit log back: rotated files in order, torn lines counted, records selected."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway import ExecutionResult
from gateway._redaction import Redactor
from gateway.audit import (
    AuditLog,
    select_records,
)

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"
NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


@pytest.fixture
def audit(log_path: Path) -> Iterator[AuditLog]:
    with AuditLog(log_path, redactor=Redactor({TOKEN: "GITHUB_TOKEN"}), clock=lambda: NOON) as log:
        yield log


def ok_result(**fields: Any) -> ExecutionResult:
    return ExecutionResult(ok=True, fuel=1234, ms=5.5, **fields)


# ---- reading it back ----------------------------------------------------------------------------


def test_records_are_selected_by_time_and_by_a_tool_glob() -> None:
    records: list[dict[str, Any]] = [
        {"time": "2026-05-01T10:00:00.000Z", "kind": "tool_call", "tool": "github.search"},
        {"time": "2026-05-01T11:00:00.000Z", "kind": "tool_call", "tool": "time.now"},
        {"time": "2026-05-01T11:30:00.000Z", "kind": "tool_call", "tool": "github.get_issue"},
        {"time": "2026-05-01T11:31:00.000Z", "kind": "execution"},
    ]
    assert select_records(records, since=NOON - timedelta(hours=1)) == records[1:]
    assert select_records(records, tool="github.*") == [records[0], records[2]]
    assert select_records(records, since=NOON - timedelta(hours=1), tool="github.*") == [records[2]]
