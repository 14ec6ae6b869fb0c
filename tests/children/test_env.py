"""The environment of a stdio child: the SDK's default, a few more variables, what its entry names."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types

from gateway.children import ChildPool
from gateway.children._env import BASE_ENV_VARS, PARENT_ENV_VAR, child_environment, find_command
from gateway.config import (
    parse_config,
)
from tests.real_servers import TINY_SERVER

WAIT = 60  # real child servers start in seconds; this bounds a hang, not a race


# ---- the environment of a child -----------------------------------------------------------------


def test_a_child_environment_is_the_base_then_named_variables_then_the_entry_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "HTTPS_PROXY": "http://proxy:3128",
        "SSL_CERT_FILE": "/etc/ca.pem",
        "SECRET_TOKEN": "must-not-leak",
        "NAMED_TOKEN": "named",
        "OVERRIDDEN": "from-gateway",
        "SHELL": "() { echo exported function; }",
    }
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    env = child_environment({"OVERRIDDEN": "from-entry", "EXTRA": "1"}, ["NAMED_TOKEN", "OVERRIDDEN"])
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "HTTPS_PROXY": "http://proxy:3128",
        "SSL_CERT_FILE": "/etc/ca.pem",
        "NAMED_TOKEN": "named",
        "OVERRIDDEN": "from-entry",
        "EXTRA": "1",
        "CODEMODE_GATEWAY_PARENT": str(os.getpid()),
    }


def test_every_child_is_told_the_gateways_pid_whatever_its_entry_or_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PARENT_ENV_VAR, "1")  # a gateway that is itself some gateway's child
    assert PARENT_ENV_VAR == "CODEMODE_GATEWAY_PARENT"
    assert child_environment({})[PARENT_ENV_VAR] == str(os.getpid())
    assert child_environment({PARENT_ENV_VAR: "42"}, [PARENT_ENV_VAR])[PARENT_ENV_VAR] == str(os.getpid())
    assert PARENT_ENV_VAR not in BASE_ENV_VARS  # set, never inherited


def test_the_base_environment_covers_locale_temp_proxies_and_ca_bundles() -> None:
    expected = {"PATH", "TEMP", "TMP", "HTTP_PROXY", "https_proxy", "NO_PROXY", "NODE_EXTRA_CA_CERTS"}
    expected |= {"SYSTEMROOT"} if sys.platform == "win32" else {"HOME", "LANG", "LC_ALL", "TMPDIR"}
    assert expected <= set(BASE_ENV_VARS)
    assert len(BASE_ENV_VARS) == len(set(BASE_ENV_VARS))


async def _child_env(entry: dict[str, Any]) -> dict[str, str]:
    config = parse_config({"mcpServers": {"tiny": entry}}, "test")
    with anyio.fail_after(WAIT):
        async with ChildPool(config.mcp_servers) as pool:
            assert await pool.wait_ready()
            result = await pool.call_tool("tiny", "env", {})
    text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return json.loads(text)


@pytest.mark.anyio
async def test_a_real_child_gets_a_gateway_secret_only_when_its_entry_names_it(
    tiny_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "gateway-only-secret")
    monkeypatch.setenv("NAMED_TOKEN", "meant-for-tiny")
    plain = await _child_env(tiny_server)
    assert "SECRET_TOKEN" not in plain
    assert "NAMED_TOKEN" not in plain
    assert plain["PATH"] == os.environ["PATH"]
    named = await _child_env(
        {**tiny_server, "env_passthrough": ["NAMED_TOKEN"], "env": {"FROM_ENTRY": "yes"}}
    )
    assert named["NAMED_TOKEN"] == "meant-for-tiny"
    assert named["FROM_ENTRY"] == "yes"
    assert plain[PARENT_ENV_VAR] == named[PARENT_ENV_VAR] == str(os.getpid())
    assert "SECRET_TOKEN" not in named
    assert "gateway-only-secret" not in json.dumps(named)


# ---- the command a child is started with --------------------------------------------------------


def _gateway_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *scripts: str) -> Path:
    """A directory standing for the gateway's venv's `bin` (its Python, and `scripts` as tiny servers),
    left off PATH as a clone's `.venv/bin/codemode-gateway` run without activating the venv leaves it."""
    directory = tmp_path / "bin"
    directory.mkdir()
    (directory / "python").symlink_to(sys.executable)
    for name in scripts:
        script = directory / name
        script.write_text(
            f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(TINY_SERVER)!r}, run_name='__main__')\n"
        )
        script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(directory / "python"))
    return directory


def test_a_command_found_on_the_path_or_given_as_a_path_is_started_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = _gateway_bin(tmp_path, monkeypatch, "sh")
    env = {"PATH": os.environ["PATH"]}
    assert find_command("sh", env["PATH"]) == "sh"  # on PATH: the gateway's own copy is not preferred
    assert find_command(str(beside / "sh"), "") == str(beside / "sh")
    assert find_command("codemode-nowhere", env["PATH"]) is None


@pytest.mark.anyio
async def test_a_command_only_beside_the_gateways_python_starts_and_one_found_nowhere_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gateway_bin(tmp_path, monkeypatch, "codemode-tiny-beside")
    servers = {"beside": {"command": "codemode-tiny-beside"}, "nowhere": {"command": "codemode-tiny-nowhere"}}
    config = parse_config({"mcpServers": servers}, "test")
    with anyio.fail_after(WAIT):
        async with ChildPool(config.mcp_servers) as pool:
            await pool.wait_ready()
            result = await pool.call_tool("beside", "echo", {"text": "found"})
            statuses = {status.name: status for status in pool.statuses()}
    assert [block.text for block in result.content if isinstance(block, types.TextContent)] == ["found"]
    assert statuses["nowhere"].error == (
        "cannot start 'codemode-tiny-nowhere': not found on the PATH children get, nor beside the "
        "gateway's Python; give its absolute path as the entry's command, or start the gateway with its "
        "directory on PATH"
    )
