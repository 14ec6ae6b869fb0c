"""The agent's CLI: what it prints is what a client shows the model, and its log counts exactly the
arguments it sent and the bytes it printed, through real servers over stdio."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcp import types

from tests.agent_eval.daemon import render
from tests.agent_eval.layout import REPO, cli_command, socket_path
from tests.agent_eval.world import Plan

WAIT = 180  # seconds: the gateway starts five children; this bounds a hang


def cli(world: Path, log: Path, interface: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = cli_command(interface, world, "--log", str(log), *args)
    return subprocess.run(command, cwd=REPO, capture_output=True, timeout=WAIT, check=False)


def records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_a_successful_result_with_structured_content_is_shown_as_compact_json() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="long text")], structured_content={"a": [1, "é"]}
    )
    assert render(result) == '{"a":[1,"é"]}'


def test_structured_numbers_are_written_as_json_stringify_writes_them() -> None:
    result = types.CallToolResult(content=[], structured_content={"ms": 60.0, "fuel": 5, "ratio": 0.25})
    assert render(result) == '{"ms":60,"fuel":5,"ratio":0.25}'


def test_an_error_is_shown_as_its_text_even_with_structured_content() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="boom")], structured_content={"a": 1}, is_error=True
    )
    assert render(result) == "boom"


def test_a_non_text_block_is_shown_as_a_short_placeholder() -> None:
    image = types.ImageContent(type="image", data="QUJD" * 100, mime_type="image/png")
    result = types.CallToolResult(content=[types.TextContent(type="text", text="logo:"), image])
    assert render(result) == "logo:\n[image image/png, 400 base64 characters]"


def test_a_direct_call_reaches_the_memory_server_on_the_world_and_logs_its_bytes(
    built_world: Path, world_plan: Plan, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    team = next(str(e["name"]) for e in world_plan.entities if e["entityType"] == "team")
    arguments = json.dumps({"names": [team]})
    done = cli(built_world, log, "direct", "--oneshot", "call", "memory.open_nodes", arguments)
    assert done.returncode == 0, done.stdout
    shown = json.loads(done.stdout)
    assert [e["name"] for e in shown["entities"]] == [team]
    assert {r["to"] for r in shown["relations"] if r["relationType"] == "member_of"} == {team}
    [record] = records(log)
    assert record == record | {
        "interface": "direct",
        "tool": "memory.open_nodes",
        "ok": True,
        "bytes_written": len(arguments.encode()),
        "bytes_read": len(done.stdout),
    }


def test_a_call_whose_arguments_are_not_a_json_object_is_logged_as_an_error(
    built_world: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    done = cli(built_world, log, "direct", "call", "time.convert_time", "[1, 2]")
    assert done.returncode == 1
    assert done.stdout == b"Error: the arguments must be a JSON object\n"
    assert records(log)[0] | {"time": None} == {
        "time": None,
        "interface": "direct",
        "command": "call",
        "tool": "time.convert_time",
        "bytes_written": 6,
        "bytes_read": len(done.stdout),
        "ok": False,
    }


def test_gateway_calls_go_through_one_background_server_until_it_is_stopped(
    world_copy: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    code = json.dumps(
        {
            "code": "tools.git.git_status(repo_path=REPO)\nprint(6 * 7)".replace(
                "REPO", repr(str(world_copy / "repo"))
            )
        }
    )
    try:
        first = cli(world_copy, log, "gateway", "call", "execute_code", code)
        server = socket_path(world_copy, "gateway")
        assert server.exists()
        second = cli(world_copy, log, "gateway", "call", "execute_code", '{"code": "1/0"}')
        answered = cli(world_copy, log, "gateway", "answer", "t05", "abc1234")
    finally:
        cli(world_copy, log, "gateway", "stop")
    assert first.returncode == 0, first.stdout
    assert b"42" in first.stdout
    assert second.returncode == 1
    assert b"ZeroDivisionError" in second.stdout
    assert answered.stdout == b""
    assert not server.exists()
    calls = records(log)
    assert [(r["tool"], r["ok"]) for r in calls[:2]] == [("execute_code", True), ("execute_code", False)]
    assert [r["bytes_written"] for r in calls[:2]] == [len(code.encode()), len(b'{"code": "1/0"}')]
    assert [r["bytes_read"] for r in calls[:2]] == [len(first.stdout), len(second.stdout)]
    assert calls[2] | {"time": None} == {
        "time": None,
        "interface": "gateway",
        "command": "answer",
        "task": "T05",
        "answer": "abc1234",
    }
