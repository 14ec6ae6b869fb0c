"""`codemode-gateway audit`, run as the real command in a process of its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway import ConfigError, ExecutionResult
from gateway.audit import AuditLog, format_records
from gateway.cli._audit import parse_since
from tests.cli.command import Commands

pytestmark = pytest.mark.anyio

WAIT = 60
NOW = datetime.now(UTC)
NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def audit_cli(commands: Commands, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run `codemode-gateway audit ARGS`; returns (exit code, stdout, stderr)."""
    return await commands.run("audit", *args, cwd=cwd)


def write_history(path: Path, **options: Any) -> None:
    """Three executions, 3 days, 2 hours and 1 minute ago, each after one or two tool calls."""
    for ago, execution_id, tools in (
        (timedelta(days=3), "a" * 32, ["github.search_issues"]),
        (timedelta(hours=2), "b" * 32, ["time.get_current_time", "github.get_issue"]),
        (timedelta(minutes=1), "c" * 32, ["memory.read_graph"]),
    ):
        with AuditLog(path, clock=lambda ago=ago: NOW - ago, **options) as log:
            for tool in tools:
                log.tool_call(execution_id, tool, {"q": "x"}, ms=2.0)
            log.execution(execution_id, f"# {execution_id}", ExecutionResult(ok=True, ms=9.0))


def rows(stdout: str) -> list[list[str]]:
    """The table's rows, without the caller column (these records have none: `-`)."""
    header, *lines = stdout.splitlines()
    assert header.split() == ["time", "kind", "caller", "execution", "tool", "/", "script", "outcome", "ms"]
    return [[cell for index, cell in enumerate(line.split()) if index != 2] for line in lines]


async def test_the_log_and_its_rotated_files_print_as_one_table_oldest_first(
    tmp_path: Path, commands: Commands
) -> None:
    log = tmp_path / "audit.jsonl"
    write_history(log, max_bytes=4096, backups=5)
    for record in range(40):  # enough to rotate a few times
        with AuditLog(log, max_bytes=4096, backups=5) as writer:
            writer.tool_call("d" * 32, "fill.pad", {"n": record, "pad": "p" * 200}, ms=1.0)
    assert (tmp_path / "audit.jsonl.1").exists()
    code, out, err = await audit_cli(commands, "--path", str(log))
    assert code == 0, err
    table = rows(out)
    assert [row[3] for row in table if row[1] == "tool_call"][-1] == "fill.pad"
    times = [row[0] for row in table]
    assert times == sorted(times)
    assert all(row[2] in ("aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd") for row in table)


async def test_since_keeps_recent_records_given_as_an_age_or_an_iso_time(
    tmp_path: Path, commands: Commands
) -> None:
    log = tmp_path / "audit.jsonl"
    write_history(log)
    code, out, err = await audit_cli(commands, "--path", str(log), "--since", "30m")
    assert code == 0, err
    assert {row[2] for row in rows(out)} == {"cccccccc"}
    since = (NOW - timedelta(days=1)).isoformat()
    code, out, _ = await audit_cli(commands, "--path", str(log), "--since", since)
    assert [row[2] for row in rows(out)] == ["bbbbbbbb"] * 3 + ["cccccccc"] * 2


async def test_tool_keeps_only_the_tool_calls_matching_a_glob(tmp_path: Path, commands: Commands) -> None:
    log = tmp_path / "audit.jsonl"
    write_history(log)
    code, out, err = await audit_cli(commands, "--path", str(log), "--tool", "github.*")
    assert code == 0, err
    assert [(row[1], row[3]) for row in rows(out)] == [
        ("tool_call", "github.search_issues"),
        ("tool_call", "github.get_issue"),
    ]


async def test_json_prints_the_selected_records_as_json_lines(tmp_path: Path, commands: Commands) -> None:
    log = tmp_path / "audit.jsonl"
    write_history(log)
    code, out, err = await audit_cli(
        commands, "--path", str(log), "--json", "--since", "3h", "--tool", "time.*"
    )
    assert code == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert (record["kind"], record["tool"], record["execution_id"]) == (
        "tool_call",
        "time.get_current_time",
        "b" * 32,
    )


async def test_the_config_names_the_log_relative_to_its_own_directory_without_needing_child_tokens(
    tmp_path: Path, commands: Commands
) -> None:
    team = tmp_path / "team"
    (team / "logs").mkdir(parents=True)
    write_history(team / "logs" / "audit.jsonl")
    config = team / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"gh": {"command": "gh", "env": {"GITHUB_TOKEN": "${CODEMODE_TEST_UNSET}"}}},
                "audit": {"path": "logs/audit.jsonl"},
            }
        ),
        encoding="utf-8",
    )
    code, out, err = await audit_cli(commands, "--config", str(config), cwd=tmp_path)
    assert code == 0, err
    assert len(rows(out)) == 7


async def test_a_config_without_an_audit_section_exits_2(tmp_path: Path, commands: Commands) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    code, out, err = await audit_cli(commands, "--config", str(config))
    assert (code, out) == (2, "")
    assert 'no audit log configured: add an "audit" section to the config, or pass --path' in err


async def test_an_invalid_audit_section_names_the_bad_key(tmp_path: Path, commands: Commands) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"audit": {"backups": -1}}), encoding="utf-8")
    code, _, err = await audit_cli(commands, "--config", str(config))
    assert code == 2
    assert "backups: Input should be greater than or equal to 0" in err
    assert "Traceback" not in err


async def test_a_missing_log_exits_1_and_a_bad_since_exits_2(tmp_path: Path, commands: Commands) -> None:
    code, _, err = await audit_cli(commands, "--path", str(tmp_path / "none.jsonl"))
    assert code == 1
    assert "no audit log at" in err
    write_history(tmp_path / "audit.jsonl")
    code, _, err = await audit_cli(
        commands, "--path", str(tmp_path / "audit.jsonl"), "--since", "last tuesday"
    )
    assert code == 2
    assert "--since 'last tuesday'" in err


async def test_unreadable_lines_are_skipped_and_counted(tmp_path: Path, commands: Commands) -> None:
    log = tmp_path / "audit.jsonl"
    write_history(log)
    with log.open("ab") as torn:
        torn.write(b'{"kind":"tool_c')
    code, out, err = await audit_cli(commands, "--path", str(log))
    assert code == 0
    assert len(rows(out)) == 7
    assert "skipped 1 unreadable line(s)" in err


def test_since_takes_an_age_or_an_iso_time() -> None:
    assert parse_since("30m", NOON) == NOON - timedelta(minutes=30)
    assert parse_since("1h", NOON) == NOON - timedelta(hours=1)
    assert parse_since("2d", NOON) == NOON - timedelta(days=2)
    assert parse_since("2026-05-01T10:00:00Z") == datetime(2026, 5, 1, 10, tzinfo=UTC)
    assert parse_since("2026-05-01T10:00") == datetime(2026, 5, 1, 10, tzinfo=UTC)  # UTC unless it says
    assert parse_since("2026-05-01") == datetime(2026, 5, 1, tzinfo=UTC)
    with pytest.raises(ConfigError, match="age"):
        parse_since("yesterday")


def test_the_table_shows_time_kind_caller_short_id_tool_or_script_hash_outcome_and_ms() -> None:
    records: list[dict[str, Any]] = [
        {
            "time": "2026-05-01T12:00:00.000Z",
            "kind": "tool_call",
            "principal": "alice",
            "execution_id": "0123456789abcdef",
            "tool": "gh.delete",
            "ok": False,
            "error": "PolicyDenied",
            "ms": 1.25,
            "approval": "declined",
        },
        {
            "time": "2026-05-01T12:00:01.000Z",
            "kind": "execution",
            "execution_id": "0123456789abcdef",
            "script_sha256": "ab" * 32,
            "ok": True,
            "ms": 20,
        },
    ]
    assert format_records(records).splitlines() == [
        "time                      kind       caller  execution  tool / script        outcome"
        "                  ms",
        "2026-05-01T12:00:00.000Z  tool_call  alice   01234567   gh.delete            PolicyDenied (declined)"
        "  1.2",
        "2026-05-01T12:00:01.000Z  execution  -       01234567   sha256:abababababab  ok                     "
        "  20.0",
    ]
