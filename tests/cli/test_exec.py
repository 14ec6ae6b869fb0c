"""`codemode-gateway exec`: outcome printing, JSON shape and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

COMMAND = [sys.executable, "-m", "gateway"]


def exec_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, "exec", *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_a_successful_snippet_prints_its_output_and_value_and_exits_0() -> None:
    done = exec_cli("-c", "print('hi')\n6 * 7")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n42\n"


def test_json_output_has_the_documented_fields() -> None:
    done = exec_cli("--json", "-c", "print('x')\n[1, 2]")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert {"ok", "stdout", "stderr", "value", "error", "tool_calls", "fuel", "ms"} <= set(outcome)
    assert outcome["ok"] is True
    assert outcome["value"] == [1, 2]


def test_a_raising_snippet_exits_1_with_its_traceback_on_stderr() -> None:
    done = exec_cli("-c", "1 / 0")
    assert done.returncode == 1
    assert 'File "<snippet>", line 1' in done.stderr
    assert "ZeroDivisionError" in done.stderr


def test_a_limit_exits_1_with_the_error_in_json(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"sandbox": {"fuel": 10_000_000}}))
    done = exec_cli("--json", "--config", str(config), "-c", "while True: pass")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "FuelExhausted"
    assert "sandbox.fuel" in error["message"]


def test_a_snippet_is_read_from_a_file_or_stdin(tmp_path: Path) -> None:
    snippet = tmp_path / "s.py"
    snippet.write_text("'from file'")
    assert exec_cli(str(snippet)).stdout == "'from file'\n"
    assert exec_cli("-", stdin="'from stdin'").stdout == "'from stdin'\n"


def test_a_bad_config_exits_2_naming_each_bad_key_without_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"sandbox": {"fuel": "lots", "typo_key": 1}}))
    done = exec_cli("--config", str(config), "-c", "1")
    assert done.returncode == 2
    assert "sandbox.fuel" in done.stderr
    assert "sandbox.typo_key" in done.stderr
    assert "Traceback" not in done.stderr


def test_usage_errors_exit_2() -> None:
    assert exec_cli().returncode == 2
    assert exec_cli(str(Path("/nonexistent/snippet.py"))).returncode == 2
