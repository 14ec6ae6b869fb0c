"""`serve`'s transport from the command line: `--http`, `--host`, `--port`, `--stdio`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.command import Commands
from tests.e2e.gateway_process import EVERYTHING

pytestmark = pytest.mark.anyio


async def test_serve_refuses_a_non_loopback_host_from_the_command_line_before_starting(
    commands: Commands,
) -> None:
    code, _, stderr = await commands.run("serve", "--http", "--host", "0.0.0.0")
    assert code == 2
    assert "serve --host 0.0.0.0: host 0.0.0.0 is not a loopback address" in stderr
    assert "the config has no `auth` section" in stderr


async def test_host_and_port_without_http_are_a_usage_error(commands: Commands) -> None:
    code, _, stderr = await commands.run("serve", "--port", "9000")
    assert code == 2
    assert "--host and --port go with --http" in stderr


async def test_stdio_and_http_cannot_both_be_asked_for(commands: Commands) -> None:
    code, _, stderr = await commands.run("serve", "--http", "--stdio")
    assert code == 2
    assert "not allowed with argument" in stderr


# Serves stdio through the CLI (stdin at EOF: the gateway starts, then stops), then names which of
# the modules only other commands or settings need were imported.
IMPORTED_BY_SERVE = """
import sys
from gateway.cli import main

code = 0
try:
    main(sys.argv[1:])
except SystemExit as stopped:
    code = stopped.code
print("imported:", code, *sorted(name for name in {names} if name in sys.modules), file=sys.stderr)
"""
# The escape suite (`sandbox-test`), redis-py (the `state` section), the OpenTelemetry SDK (OTEL_*).
NOT_FOR_STDIO = ("gateway.escape", "redis", "opentelemetry.sdk")


def modules_imported_by(*argv: str) -> list[str]:
    """Which of NOT_FOR_STDIO `codemode-gateway ARGV` imported, run in a fresh interpreter (which
    must exit 0: a command that failed early would have imported nothing)."""
    driver = IMPORTED_BY_SERVE.format(names=NOT_FOR_STDIO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", driver, *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    [line] = [line for line in done.stderr.splitlines() if line.startswith("imported:")]
    _, code, *names = line.split()
    assert code == "0", done.stderr[-2000:]
    return names


def test_serving_stdio_imports_neither_the_escape_suite_nor_redis_nor_the_tracing_sdk(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"everything": EVERYTHING}}))  # any child will do
    assert modules_imported_by("serve", "--config", str(config)) == []


def test_the_escape_suite_is_imported_by_the_command_that_runs_it() -> None:
    assert modules_imported_by("sandbox-test", "--list") == ["gateway.escape"]
