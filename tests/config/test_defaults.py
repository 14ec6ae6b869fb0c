"""The built-in default config: the venv's Python servers, and the pinned npm ones when npx exists."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

from gateway.children.config import StdioServer
from gateway.config._defaults import NPM_SERVER_PINS, PYPI_SERVER_PINS, default_config
from tests.real_servers import REPO

# As `claude mcp add` writes them into a project's .mcp.json (stdio with "type", and http).
# As Claude Desktop's claude_desktop_config.json writes them: no "type" at all.


def only_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """PATH holds one directory with a do-nothing `command` in it, and nothing else."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    executable = fake_bin / command
    executable.write_text("#!/bin/sh\n", encoding="utf-8")
    executable.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_bin))


def test_the_builtin_default_runs_time_and_git_from_this_venv_on_the_enclosing_repository(
    git_repo: Path, tmp_path: Path
) -> None:
    inside = git_repo / "sub" / "dir"
    inside.mkdir(parents=True)
    servers = default_config(inside).mcp_servers
    time, git = servers["time"], servers["git"]
    assert isinstance(time, StdioServer)
    assert isinstance(git, StdioServer)
    assert (time.command, time.args) == (sys.executable, ["-m", "mcp_server_time"])
    assert (git.command, git.args) == (
        sys.executable,
        ["-m", "mcp_server_git", "--repository", str(git_repo)],
    )
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    git_outside = default_config(outside).mcp_servers["git"]
    assert isinstance(git_outside, StdioServer)
    assert git_outside.args == ["-m", "mcp_server_git"]


def test_the_builtin_default_adds_the_pinned_npm_servers_only_when_npx_is_on_path_and_else_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_on_path(tmp_path, monkeypatch, "npx")
    servers = default_config(tmp_path).mcp_servers
    memory, everything = servers["memory"], servers["everything"]
    assert isinstance(memory, StdioServer)
    assert isinstance(everything, StdioServer)
    assert memory.args == [
        "-y",
        "@modelcontextprotocol/server-memory@" + NPM_SERVER_PINS["@modelcontextprotocol/server-memory"],
    ]
    assert everything.command == "npx"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    without = default_config(tmp_path)
    assert set(without.mcp_servers) == {"time", "git"}
    assert dict(without.unavailable_servers) == {
        "memory": "mcpServers.memory: npx is not on PATH: install Node.js 20 or later",
        "everything": "mcpServers.everything: npx is not on PATH: install Node.js 20 or later",
    }


def test_the_makefile_installs_exactly_the_npm_versions_the_default_pins() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    pinned = dict(re.findall(r"(@modelcontextprotocol/server-[a-z]+)@(\d[\w.]*)", makefile))
    assert pinned == NPM_SERVER_PINS


def test_without_the_python_servers_installed_the_default_runs_them_through_uvx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_on_path(tmp_path, monkeypatch, "uvx")
    real_find_spec = importlib.util.find_spec
    hidden = {"mcp_server_time", "mcp_server_git"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in hidden else real_find_spec(name, *a)
    )
    servers = default_config(tmp_path).mcp_servers
    time = servers["time"]
    assert isinstance(time, StdioServer)
    assert (time.command, time.args) == ("uvx", [f"mcp-server-time=={PYPI_SERVER_PINS['mcp-server-time']}"])
    assert time.startup_timeout_seconds == 120
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "empty" / "python"))  # no uv beside it either
    nothing = default_config(tmp_path)  # nothing can run them: they are left out, saying what they need
    assert nothing.mcp_servers == {}
    assert nothing.unavailable_servers["time"] == (
        "mcpServers.time: mcp-server-time is not installed beside the gateway and uvx is not on PATH: "
        f"pip install uv (or pip install mcp-server-time=={PYPI_SERVER_PINS['mcp-server-time']})"
    )
    assert set(nothing.unavailable_servers) == {"time", "git", "memory", "everything"}


def test_the_test_extra_pins_the_python_servers_the_default_runs_through_uvx() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for package, version in PYPI_SERVER_PINS.items():
        assert f'"{package}=={version}"' in pyproject


def test_the_defaults_extra_that_make_run_installs_pins_exactly_the_default_python_servers() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pinned = pyproject["project"]["optional-dependencies"]["defaults"]
    assert sorted(pinned) == sorted(f"{package}=={version}" for package, version in PYPI_SERVER_PINS.items())
