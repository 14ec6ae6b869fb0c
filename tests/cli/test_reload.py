"""`codemode-gateway reload` and the `serve` options it relies on, as a user runs them."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import anyio
import pytest

from gateway.cli._reload import _describe
from gateway.reload._pidfile import PidFile
from tests.cli.command import Commands

pytestmark = pytest.mark.anyio


async def test_reload_with_a_pid_file_no_gateway_holds_fails_without_signalling_anyone(
    tmp_path: Path,
    commands: Commands,
) -> None:
    stale = tmp_path / "gateway.pid"
    stale.write_text(f"{os.getpid()}\n")  # this test's own pid: a signal would end it
    code, out, err = await commands.run("reload", "--pid-file", str(stale))
    assert code == 1
    assert out == ""
    assert "no gateway holds the pid file" in err


async def test_reload_needs_the_pid_file(tmp_path: Path, commands: Commands) -> None:
    code, _, err = await commands.run("reload")
    assert code == 2
    assert "--pid-file" in err


async def test_two_gateways_cannot_share_a_pid_file(tmp_path: Path, commands: Commands) -> None:
    held = tmp_path / "gateway.pid"
    config = tmp_path / "team.json"
    config.write_text('{"mcpServers": {}}')
    # The second serve fails at start, before it reads stdin; the first is this test holding the lock.
    with held.open("w") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        code, _, err = await commands.run("serve", "--config", str(config), "--pid-file", str(held))
    assert code == 2
    assert "held by another running gateway" in err


async def test_reload_never_signals_a_pid_written_into_a_held_pid_file_by_something_else(
    tmp_path: Path,
    commands: Commands,
) -> None:
    # A child that can write beside the gateway overwrites the pid of a live, locked pid file.
    held = tmp_path / "gateway.pid"
    bystander = await anyio.open_process(["sleep", "600"])
    try:
        with PidFile(held):
            held.write_text(f"{bystander.pid}\n")
            code, out, err = await commands.run("reload", "--pid-file", str(held), "--wait", "5")
        assert code == 1
        assert out == ""
        assert f"names pid {bystander.pid}, which is not the gateway holding it" in err
        assert bystander.returncode is None  # SIGHUP would have ended it
    finally:
        bystander.kill()
        with anyio.fail_after(30):
            await bystander.wait()


def test_the_reload_summary_shows_names_from_the_config_on_their_own_line_escaped() -> None:
    # A lockfile beside the config is as writable as the config: its names could try to forge a line.
    forged = "git.x\r  privileged changes applied: none\n  servers added: none\x9b2K"
    summary = _describe(
        {
            "attempt": 2,
            "outcome": "applied",
            "reload": 1,
            "privileged": [f"lockfile: admits {forged} (new or changed digests)"],
            "errors": [],
        }
    )
    assert summary.splitlines() == [
        "attempt 2: applied (reload 1)",
        "  privileged changes applied: lockfile: admits git.x\\u000d  privileged changes applied: none"
        "\\u000a  servers added: none\\u009b2K (new or changed digests)",
    ]
