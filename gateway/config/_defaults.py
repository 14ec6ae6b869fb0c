"""The built-in default config: the children `codemode-gateway serve` runs when no config is given."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from gateway.config._model import GatewayConfig

__all__ = ["NPM_SERVER_PINS", "default_config"]

# The npm servers of the built-in default, pinned; the Makefile installs the same versions for the tests.
NPM_SERVER_PINS = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
# `npx -y` may have to fetch the package on first use, which takes longer than starting it.
_NPX_STARTUP_TIMEOUT_SECONDS = 120.0


def _git_toplevel(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():  # a directory, or a file in worktrees and submodules
            return directory
    return None


def default_config(cwd: Path | None = None) -> GatewayConfig:
    """The built-in children: time and git from this venv, plus memory and everything when npx exists."""
    servers: dict[str, Any] = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}
    git_args = ["-m", "mcp_server_git"]
    repository = _git_toplevel((cwd or Path.cwd()).resolve())
    if repository is not None:
        git_args += ["--repository", str(repository)]
    servers["git"] = {"command": sys.executable, "args": git_args}
    if shutil.which("npx"):
        for name in ("memory", "everything"):
            package = f"@modelcontextprotocol/server-{name}"
            servers[name] = {
                "command": "npx",
                "args": ["-y", f"{package}@{NPM_SERVER_PINS[package]}"],
                "startup_timeout_seconds": _NPX_STARTUP_TIMEOUT_SECONDS,
            }
    return GatewayConfig.model_validate({"mcpServers": servers})
