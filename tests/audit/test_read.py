"""Reading the audit log back: rotated files in order, torn lines counted, records selected."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.audit import format_records, issuers_of, select_records

NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


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


def test_a_suppressed_record_reads_as_a_count_in_the_table() -> None:
    record = {"time": "2026-05-01T11:00:00.000Z", "kind": "suppressed", "principal": "m", "records": 42}
    [_, row] = format_records([record]).splitlines()
    assert "suppressed" in row
    assert "42 records past the caller's budget, not written" in row
    assert "counted" in row
    assert "error" not in row


def test_a_principal_of_two_issuers_is_two_callers_told_apart_by_the_issuer() -> None:
    static = {"kind": "execution", "principal": "alice", "issuer": "codemode-gateway:tokens"}
    jwt = {"kind": "execution", "principal": "alice", "issuer": "https://idp.example.com"}
    bob = {"kind": "execution", "principal": "bob", "issuer": "codemode-gateway:tokens"}
    records: list[dict[str, Any]] = [static, jwt, bob]
    named = select_records(records, principal="alice")
    assert issuers_of(named) == ["codemode-gateway:tokens", "https://idp.example.com"]
    assert select_records(records, principal="alice", issuer="https://idp.example.com") == [jwt]
    assert select_records(records, principal="alice", issuer="codemode-gateway:tokens") == [static]
