"""The audit log: JSON lines written through per record, rotation, concurrent writers, no secrets."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway import ConfigError, ExecutionResult, PolicyDenied, SandboxLimits
from gateway.audit import AuditLog, Caller, check_audit_log, new_execution_id, read_audit
from gateway.audit._log import MAX_TOOL_CHARS
from gateway.audit._read import audit_files
from gateway.audit.config import AuditConfig
from gateway.sandbox.result import ErrorInfo, ToolCallRecord
from gateway.shared._redaction import Redactor

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


def test_an_execution_and_its_tool_calls_are_one_json_line_each_linked_by_the_execution_id(
    audit: AuditLog, log_path: Path
) -> None:
    execution_id = new_execution_id()
    audit.tool_call(execution_id, "time.get_current_time", {"timezone": "UTC"}, ms=1.23456)
    calls = [ToolCallRecord(tool="time.get_current_time", ms=1.2, ok=True)]
    audit.execution(
        execution_id,
        "tools.time.get_current_time(timezone='UTC')",
        ok_result(tool_calls=calls),
        limits=SandboxLimits(),
        timeout=5.0,
        caller=Caller(client_name="claude-code", client_version="2.1.0"),
    )
    call, execution = lines_of(log_path)
    assert call == {
        "time": "2026-05-01T12:00:00.000Z",
        "kind": "tool_call",
        "execution_id": execution_id,
        "tool": "time.get_current_time",
        "arguments": {"timezone": "UTC"},
        "ok": True,
        "error": None,
        "ms": 1.235,
        "approval": "not_required",
    }
    script = "tools.time.get_current_time(timezone='UTC')"
    assert execution["kind"] == "execution"
    assert execution["execution_id"] == execution_id
    assert execution["client"] == {"name": "claude-code", "version": "2.1.0"}
    assert execution["script_sha256"] == hashlib.sha256(script.encode()).hexdigest()
    assert "script" not in execution  # include_script is off by default
    assert execution["limits"]["timeout_seconds"] == 5.0
    assert execution["limits"]["fuel"] == SandboxLimits().fuel
    gateway_wide = {"prewarm_instances", "max_queued_executions", "pool_keep_resident_bytes"}
    assert not gateway_wide & set(execution["limits"])
    assert (execution["ok"], execution["error"], execution["fuel"], execution["ms"]) == (
        True,
        None,
        1234,
        5.5,
    )
    assert execution["tool_calls"] == 1


def test_a_failed_execution_records_its_error_type_and_kind(audit: AuditLog, log_path: Path) -> None:
    failed = ExecutionResult(
        ok=False, error=ErrorInfo(type="FuelExhausted", category="limit", message="out of fuel")
    )
    audit.execution("e1", "while True: pass", failed)
    (record,) = lines_of(log_path)
    assert (record["ok"], record["error"], record["error_category"]) == (False, "FuelExhausted", "limit")
    assert "out of fuel" not in json.dumps(record)  # messages may quote data; only the class is kept
    assert "client" not in record


def test_a_failed_tool_call_records_the_error_class_and_the_approval_outcome(
    audit: AuditLog, log_path: Path
) -> None:
    audit.tool_call("e1", "gh.delete", {}, ms=1, error=PolicyDenied("nope", rule="deny"), approval="declined")
    audit.tool_call("e1", "gh.get", {}, ms=1, error=TimeoutError("slow"), approval="approved")
    audit.tool_call("e1", "gh.put", {}, ms=1, error="ChildUnavailable", approval="unavailable")
    records = lines_of(log_path)
    assert [(r["ok"], r["error"], r["approval"]) for r in records] == [
        (False, "PolicyDenied", "declined"),
        (False, "TimeoutError", "approved"),
        (False, "ChildUnavailable", "unavailable"),
    ]


def test_every_record_is_in_the_file_while_the_log_is_still_open(audit: AuditLog, log_path: Path) -> None:
    for count in range(1, 4):
        audit.tool_call("e1", "t.x", {"n": count}, ms=0.1)
        with log_path.open("rb") as reader:  # another open file: sees only what reached the OS
            assert reader.read().count(b"\n") == count


def test_fsync_per_record_can_be_turned_on(log_path: Path) -> None:
    with AuditLog(log_path, fsync=True) as log:
        log.tool_call("e1", "t.x", {}, ms=0.1)
        assert len(lines_of(log_path)) == 1


def test_secrets_never_appear_in_audit_lines(log_path: Path) -> None:
    redactor = Redactor({TOKEN: "GITHUB_TOKEN"})
    with AuditLog(log_path, redactor=redactor, include_script=True) as log:
        script = f"tools.gh.search(q='{TOKEN}')"
        log.tool_call("e1", "gh.search", {"q": TOKEN, TOKEN: [TOKEN]}, ms=1, error=f"bad {TOKEN}")
        log.tool_call("e1", f"gh.{TOKEN}", {}, ms=1)
        failed = ExecutionResult(
            ok=False, error=ErrorInfo(type="ToolError", category="snippet", message=TOKEN)
        )
        log.execution("e1", script, failed, caller=Caller(client_name=f"client {TOKEN}"))
    text = log_path.read_text(encoding="ascii")
    assert TOKEN not in text
    assert "[REDACTED:GITHUB_TOKEN]" in text
    first, _, execution = lines_of(log_path)
    assert first["arguments"] == {
        "q": "[REDACTED:GITHUB_TOKEN]",
        "[REDACTED:GITHUB_TOKEN]": ["[REDACTED:GITHUB_TOKEN]"],
    }
    assert execution["script"] == "tools.gh.search(q='[REDACTED:GITHUB_TOKEN]')"
    assert execution["script_sha256"] == hashlib.sha256(script.encode()).hexdigest()


def test_arguments_can_be_recorded_as_their_sha256_or_not_at_all(tmp_path: Path) -> None:
    arguments = {"q": TOKEN, "a": [1, 2]}
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    for mode in ("hash", "omit"):
        path = tmp_path / f"{mode}.jsonl"
        with AuditLog(path, arguments=mode) as log:
            log.tool_call("e1", "gh.search", arguments, ms=1)
        (record,) = lines_of(path)
        assert "arguments" not in record
        assert TOKEN not in path.read_text(encoding="ascii")
        if mode == "hash":
            assert record["arguments_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
        else:
            assert "arguments_sha256" not in record


def test_non_ascii_text_is_escaped_so_every_line_is_ascii(audit: AuditLog, log_path: Path) -> None:
    audit.tool_call("e1", "t.x", {"text": "café \u2028 \ud800"}, ms=1)
    (record,) = lines_of(log_path)
    assert record["arguments"] == {"text": "café \u2028 \ud800"}


def test_rotation_at_the_cap_keeps_the_configured_number_of_backups(log_path: Path) -> None:
    with AuditLog(log_path, max_bytes=4096, backups=2) as log:
        for index in range(200):
            log.tool_call("e1", "t.x", {"index": index, "pad": "x" * 100}, ms=1)
    files = audit_files(log_path)
    assert [file.name for file in files] == ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
    assert all(file.stat().st_size <= 4096 for file in files)
    indexes = [record["arguments"]["index"] for record in read_audit(log_path).records]
    assert indexes == list(range(200 - len(indexes), 200))  # oldest first, nothing missing in between
    assert len(indexes) < 200  # the oldest file was dropped


def test_with_no_backups_the_file_starts_over_at_the_cap(log_path: Path) -> None:
    with AuditLog(log_path, max_bytes=4096, backups=0) as log:
        for index in range(100):
            log.tool_call("e1", "t.x", {"index": index, "pad": "x" * 100}, ms=1)
    assert audit_files(log_path) == [log_path]
    assert lines_of(log_path)[-1]["arguments"]["index"] == 99
    assert log_path.stat().st_size <= 4096


def test_a_record_larger_than_the_cap_is_still_written_whole(log_path: Path) -> None:
    with AuditLog(log_path, max_bytes=4096, backups=1, max_argument_bytes=20_000) as log:
        log.tool_call("e1", "t.x", {"small": 1}, ms=1)
        log.tool_call("e1", "t.x", {"big": "x" * 10_000}, ms=1)
    assert lines_of(log_path)[0]["arguments"]["big"] == "x" * 10_000


def test_concurrent_writers_on_threads_produce_intact_lines(log_path: Path) -> None:
    threads_count, per_thread = 8, 250
    barrier = threading.Barrier(threads_count)

    with AuditLog(log_path, max_bytes=64 * 1024 * 1024) as log:

        def writer(number: int) -> None:
            barrier.wait()
            for index in range(per_thread):
                log.tool_call(f"thread-{number}", "t.x", {"index": index, "pad": "y" * number * 50}, ms=1)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    readout = read_audit(log_path)
    assert readout.malformed == 0
    for number in range(threads_count):
        mine = [r["arguments"]["index"] for r in readout.records if r["execution_id"] == f"thread-{number}"]
        assert mine == list(range(per_thread))


def test_concurrent_writers_across_rotations_leave_no_torn_line(log_path: Path) -> None:
    with AuditLog(log_path, max_bytes=8192, backups=50) as log:

        def writer(number: int) -> None:
            for index in range(100):
                log.tool_call(f"thread-{number}", "t.x", {"index": index}, ms=1)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    readout = read_audit(log_path)
    assert (readout.malformed, len(readout.records)) == (0, 600)


def test_reopening_after_a_torn_last_line_starts_a_new_line(log_path: Path) -> None:
    log_path.write_bytes(b'{"kind":"tool_call","time":"2026-05-01T11:00:00Z"}\n{"kind":"tool_ca')
    with AuditLog(log_path) as log:
        log.tool_call("e1", "t.x", {}, ms=1)
    readout = read_audit(log_path)
    assert readout.malformed == 1
    assert [r["kind"] for r in readout.records] == ["tool_call", "tool_call"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_log_file_is_readable_by_its_owner_only(audit: AuditLog, log_path: Path) -> None:
    assert stat.S_IMODE(os.stat(log_path).st_mode) == 0o600


def test_a_closed_log_refuses_records(audit: AuditLog) -> None:
    audit.close()
    with pytest.raises(ValueError, match="closed"):
        audit.tool_call("e1", "t.x", {}, ms=1)


def test_an_unwritable_path_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot open the audit log"):
        AuditLog(blocker / "audit.jsonl")


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("a file as its directory", "Not a directory"),
        ("a file as a directory above it", "Not a directory"),
        ("a directory", "Is a directory"),
        ("a symlink", "Too many levels of symbolic links"),
    ],
)
def test_a_path_the_log_cannot_be_opened_at_is_refused_by_the_check_as_by_opening(
    tmp_path: Path, where: str, reason: str
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    path = {
        "a file as its directory": blocker / "audit.jsonl",
        "a file as a directory above it": blocker / "logs" / "audit.jsonl",
        "a directory": tmp_path,
        "a symlink": tmp_path / "link.jsonl",
    }[where]
    if where == "a symlink":
        path.symlink_to(blocker)
    with pytest.raises(ConfigError, match=f"cannot open the audit log {path}: {reason}; set audit.path"):
        check_audit_log(AuditConfig(path=str(path)), tmp_path)
    with pytest.raises(ConfigError, match=f"cannot open the audit log {path}: "):
        AuditLog(path)


def test_the_check_passes_a_log_to_be_created_and_creates_nothing(tmp_path: Path) -> None:
    check_audit_log(AuditConfig(path="logs/today/audit.jsonl"), tmp_path)
    assert list(tmp_path.iterdir()) == []
    with AuditLog(AuditConfig(path="logs/today/audit.jsonl").resolve_path(tmp_path)):
        pass
    check_audit_log(AuditConfig(path="logs/today/audit.jsonl"), tmp_path)  # and an existing one


def test_the_config_section_has_defaults_and_resolves_a_relative_path_against_the_base_dir(
    tmp_path: Path,
) -> None:
    config = AuditConfig()
    assert (config.path, config.include_script, config.arguments) == ("audit.jsonl", False, "redacted")
    assert (config.max_bytes, config.backups, config.fsync) == (10 * 1024 * 1024, 3, False)
    assert config.resolve_path(tmp_path) == tmp_path / "audit.jsonl"
    absolute = tmp_path / "elsewhere" / "a.jsonl"
    assert AuditConfig(path=str(absolute)).resolve_path(Path("/unused")) == absolute
    with AuditLog.from_config(AuditConfig(path="logs/a.jsonl", arguments="omit"), tmp_path) as log:
        assert log.path == tmp_path / "logs" / "a.jsonl"
        assert log.arguments == "omit"
    with pytest.raises(ValueError, match="arguments"):
        AuditConfig.model_validate({"arguments": "plain"})


def test_arguments_past_the_cap_are_recorded_as_their_digest_and_size(log_path: Path) -> None:
    small, big = {"q": "café"}, {"text": "é" * 120_000}
    with AuditLog(log_path, max_argument_bytes=2_048) as log:
        log.tool_call("e1", "t.x", small, ms=1)
        log.tool_call("e1", "t.x", big, ms=1)
    kept, digested = lines_of(log_path)
    assert kept["arguments"] == small
    canonical = json.dumps(big, sort_keys=True, separators=(",", ":"))
    assert "arguments" not in digested
    assert digested["arguments_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert digested["arguments_bytes"] == len(canonical)
    assert all(len(line) < 1_024 for line in log_path.read_bytes().splitlines())


def test_a_call_to_no_tool_is_recorded_tersely_with_a_clipped_name_and_a_digest(log_path: Path) -> None:
    with AuditLog(log_path) as log:
        log.tool_call("e1", "nope." + "é" * 10_000, {"a": 1}, ms=1, error="ToolError", resolved=False)
    [record] = lines_of(log_path)
    assert record["tool"] == "nope." + "é" * (MAX_TOOL_CHARS - 5)
    assert "arguments" not in record
    assert len(record["arguments_sha256"]) == 64
    assert log_path.stat().st_size < 2_048


class _Clock:
    def __init__(self) -> None:
        self.now = NOON

    def __call__(self) -> datetime:
        return self.now


def test_one_principals_volume_past_its_budget_is_summarised_and_rotates_no_one_out(log_path: Path) -> None:
    clock = _Clock()
    with AuditLog(log_path, max_bytes=16_384, backups=1, principal_budget_bytes=4_096, clock=clock) as log:
        log.tool_call("e0", "t.x", {"n": 0}, ms=1, caller=Caller(principal="alice"))
        for index in range(1_000):
            log.tool_call(
                "e1", "nope", {"é": "é" * 500, "i": index}, ms=1, caller=Caller(principal="mallory")
            )
        log.tool_call("e2", "t.y", {}, ms=1, caller=Caller(principal="alice"))
        clock.now += timedelta(hours=1)
        log.tool_call("e3", "t.z", {}, ms=1, caller=Caller(principal="alice"))
    records = [record for path in reversed(audit_files(log_path)) for record in lines_of(path)]
    assert [r["execution_id"] for r in records if r.get("principal") == "alice"] == ["e0", "e2", "e3"]
    [summary] = [r for r in records if r["kind"] == "suppressed"]
    written = [r for r in records if r.get("principal") == "mallory" and r["kind"] == "tool_call"]
    assert summary["principal"] == "mallory"
    assert summary["records"] + len(written) == 1_000
    assert summary["kinds"] == {"tool_call": summary["records"]}
    assert summary["budget_bytes"] == 4_096
    assert sum(path.stat().st_size for path in audit_files(log_path)) < 8_192


def test_a_principal_of_another_issuer_has_a_budget_of_its_own_and_its_summary_names_the_issuer(
    log_path: Path,
) -> None:
    static = Caller(principal="alice", issuer="codemode-gateway:tokens")
    jwt = Caller(principal="alice", issuer="https://idp.example.com")
    with AuditLog(log_path, principal_budget_bytes=2_048) as log:
        for index in range(50):
            log.tool_call("e1", "nope", {"pad": "x" * 100, "i": index}, ms=1, caller=jwt)
        log.tool_call("e2", "t.x", {}, ms=1, caller=static)
    records = lines_of(log_path)
    assert [r["execution_id"] for r in records if r.get("issuer") == "codemode-gateway:tokens"] == ["e2"]
    [summary] = [r for r in records if r["kind"] == "suppressed"]
    assert (summary["principal"], summary["issuer"]) == ("alice", "https://idp.example.com")


def test_an_open_window_is_summarised_when_the_log_closes(log_path: Path) -> None:
    with AuditLog(log_path, principal_budget_bytes=1) as log:
        log.tool_call("e1", "t.x", {}, ms=1)
        log.tool_call("e1", "t.x", {}, ms=1)
    [summary] = lines_of(log_path)
    assert summary["kind"] == "suppressed"
    assert "principal" not in summary
    assert summary["records"] == 2


def test_a_budget_of_zero_writes_every_record(log_path: Path) -> None:
    with AuditLog(log_path, principal_budget_bytes=0) as log:
        for _ in range(50):
            log.tool_call("e1", "t.x", {"pad": "x" * 1_000}, ms=1)
    assert len(lines_of(log_path)) == 50


def test_a_symlink_planted_where_the_log_starts_over_never_receives_a_record(
    log_path: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own file\n", encoding="utf-8")
    with AuditLog(log_path, max_bytes=4096, backups=0) as log:
        log_path.unlink()
        log_path.symlink_to(victim)  # a child that can write the log's directory plants it
        arguments = {"pad": "$(id)" * 25}
        for _ in range(100):  # past the cap: the log starts over, where the symlink now is
            log.record(lambda log_: log_.tool_call("e1", "t.x", arguments, ms=1))
        log_path.unlink()  # the operator removes it: the log goes on
        log.tool_call("e2", "t.x", {}, ms=1)
    assert victim.read_text(encoding="utf-8") == "# the user's own file\n"
    assert lines_of(log_path)[-1]["execution_id"] == "e2"


def test_a_log_path_that_is_a_symlink_is_refused_at_start(log_path: Path, tmp_path: Path) -> None:
    log_path.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(ConfigError, match="cannot open the audit log"):
        AuditLog(log_path)
    assert not (tmp_path / "elsewhere.jsonl").exists()
