"""`codemode-gateway exec`: outcome printing, JSON shape and exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.command import Commands


def exec_cli(commands: Commands, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`codemode-gateway exec ARGS`, with `stdin`."""
    code, out, err = commands.run_sync("exec", *args, stdin=stdin)
    return subprocess.CompletedProcess(["codemode-gateway", "exec", *args], code, out, err)


def test_a_successful_snippet_prints_its_output_and_value_and_exits_0(commands: Commands) -> None:
    done = exec_cli(commands, "-c", "print('hi')\n6 * 7")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n42\n"


def test_json_output_has_the_documented_fields(commands: Commands) -> None:
    done = exec_cli(commands, "--json", "-c", "print('x')\n[1, 2]")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert {"ok", "stdout", "stderr", "value", "error", "tool_calls", "fuel", "ms"} <= set(outcome)
    assert outcome["ok"] is True
    assert outcome["value"] == [1, 2]


def test_a_raising_snippet_exits_1_with_its_traceback_on_stderr(commands: Commands) -> None:
    done = exec_cli(commands, "-c", "1 / 0")
    assert done.returncode == 1
    assert 'File "<snippet>", line 1' in done.stderr
    assert "ZeroDivisionError" in done.stderr


def test_a_limit_exits_1_with_the_error_in_json(tmp_path: Path, commands: Commands) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"sandbox": {"fuel": 10_000_000}}))
    done = exec_cli(commands, "--json", "--config", str(config), "-c", "while True: pass")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "FuelExhausted"
    assert "sandbox.fuel" in error["message"]


def test_a_snippet_is_read_from_a_file_or_stdin(tmp_path: Path, commands: Commands) -> None:
    snippet = tmp_path / "s.py"
    snippet.write_text("'from file'")
    assert exec_cli(commands, str(snippet)).stdout == "'from file'\n"
    assert exec_cli(commands, "-", stdin="'from stdin'").stdout == "'from stdin'\n"


def test_a_bad_config_exits_2_naming_each_bad_key_without_a_traceback(
    tmp_path: Path, commands: Commands
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"sandbox": {"fuel": "lots", "typo_key": 1}}))
    done = exec_cli(commands, "--config", str(config), "-c", "1")
    assert done.returncode == 2
    assert "sandbox.fuel" in done.stderr
    assert "sandbox.typo_key" in done.stderr
    assert "Traceback" not in done.stderr


def test_usage_errors_exit_2(commands: Commands) -> None:
    assert exec_cli(commands).returncode == 2
    assert exec_cli(commands, str(Path("/nonexistent/snippet.py"))).returncode == 2
