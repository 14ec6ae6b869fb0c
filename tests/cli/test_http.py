"""`serve`'s transport from the command line: `--http`, `--host`, `--port`, `--stdio`."""

from __future__ import annotations

import pytest

from tests.cli.command import run_command

pytestmark = pytest.mark.anyio


async def test_serve_refuses_a_non_loopback_host_from_the_command_line_before_starting() -> None:
    code, _, stderr = await run_command("serve", "--http", "--host", "0.0.0.0")
    assert code == 2
    assert "serve --host 0.0.0.0: host 0.0.0.0 is not a loopback address" in stderr
    assert "the config has no `auth` section" in stderr


async def test_host_and_port_without_http_are_a_usage_error() -> None:
    code, _, stderr = await run_command("serve", "--port", "9000")
    assert code == 2
    assert "--host and --port go with --http" in stderr


async def test_stdio_and_http_cannot_both_be_asked_for() -> None:
    code, _, stderr = await run_command("serve", "--http", "--stdio")
    assert code == 2
    assert "not allowed with argument" in stderr
