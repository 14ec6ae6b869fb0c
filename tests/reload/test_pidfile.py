"""The pid file behind `codemode-gateway reload`: a pid is signalled only while a gateway holds it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.errors import ConfigError, GatewayError
from gateway.reload import request_reload
from gateway.reload._pidfile import PidFile
from gateway.reload._reloader import ReloadResult


def test_a_pid_file_no_gateway_holds_is_refused_and_its_pid_never_signalled(tmp_path: Path) -> None:
    # Left behind by a gateway that died: the pid in it may belong to anyone now (here, this test).
    path = tmp_path / "gateway.pid"
    path.write_text(f"{os.getpid()}\n")
    with pytest.raises(GatewayError, match="no gateway holds the pid file"):
        request_reload(path, timeout=1)
    assert not (tmp_path / "gateway.pid.request").exists()


def test_a_missing_pid_file_says_how_the_gateway_should_have_been_started(tmp_path: Path) -> None:
    with pytest.raises(GatewayError, match="--pid-file"):
        request_reload(tmp_path / "absent.pid", timeout=1)


def test_the_gateway_writes_its_pid_and_a_second_gateway_cannot_take_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway.pid"
    with PidFile(path):
        assert path.read_text() == f"{os.getpid()}\n"
        with pytest.raises(ConfigError, match="held by another running gateway"), PidFile(path):
            pass
    assert not path.exists()  # removed as the gateway stops


def test_a_request_names_who_asked_and_is_taken_once(tmp_path: Path) -> None:
    path = tmp_path / "gateway.pid"
    with PidFile(path) as pid_file:
        (tmp_path / "gateway.pid.request").write_text('{"pid": 42, "user": "ops", "extra": "ignored"}')
        assert pid_file.take_request() == {"pid": 42, "user": "ops"}
        assert pid_file.take_request() is None


def test_a_symlink_planted_at_the_pid_file_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own file\n")
    path = tmp_path / "gateway.pid"
    path.symlink_to(victim)
    with pytest.raises(ConfigError, match="cannot write the pid file"), PidFile(path):
        pass
    assert victim.read_text() == "# the user's own file\n"


def test_a_status_is_never_written_through_a_symlink_planted_beside_the_pid_file(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own file\n")
    path = tmp_path / "gateway.pid"
    with PidFile(path) as pid_file:
        # The name the status used to be written under first: the gateway's pid is in the pid file.
        (tmp_path / f".gateway.pid.status.{os.getpid()}.tmp").symlink_to(victim)
        pid_file.write_status(ReloadResult(1, "file", "refused", errors=["mcpServers.$(id): added"]))
        status = json.loads((tmp_path / "gateway.pid.status").read_text())
    assert victim.read_text() == "# the user's own file\n"
    assert status["errors"] == ["mcpServers.$(id): added"]
