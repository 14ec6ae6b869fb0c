"""The built-in default config: the children `codemode-gateway serve` runs when no config is given."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from gateway.children import find_command
from gateway.config._model import GatewayConfig

__all__ = ["NPM_SERVER_PINS", "PYPI_SERVER_PINS", "default_config"]

# The Python servers of the built-in default, pinned for `uvx` (the test extra pins the same versions).
PYPI_SERVER_PINS = {"mcp-server-time": "2026.10.19", "mcp-server-git": "2026.10.19"}

# The npm servers of the built-in default, pinned; the Makefile installs the same versions for the tests.
NPM_SERVER_PINS = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
# `npx -y` and `uvx` may have to fetch the package on first use, which takes longer than starting it.
_FETCH_STARTUP_TIMEOUT_SECONDS = 120.0


def _git_toplevel(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():  # a directory, or a file in worktrees and submodules
            return directory
    return None


def _on_path(command: str) -> bool:
    """Whether a child could start `command`, looked up as children look it up."""
    return find_command(command, os.environ.get("PATH")) is not None


def _python_server(package: str, args: list[str]) -> dict[str, Any] | None:
    """A PyPI server from this environment if it is installed here, else through `uvx`, else None."""
    module = package.replace("-", "_")
    if importlib.util.find_spec(module) is not None:
        return {"command": sys.executable, "args": ["-m", module, *args]}
    if _on_path("uvx"):
        # `uvx` may have to fetch the package on first use, like `npx -y`.
        return {
            "command": "uvx",
            "args": [f"{package}=={PYPI_SERVER_PINS[package]}", *args],
            "startup_timeout_seconds": _FETCH_STARTUP_TIMEOUT_SECONDS,
        }
    return None


def default_config(cwd: Path | None = None) -> GatewayConfig:
    """The built-in children: time and git (from this environment, else through uvx), plus memory and
    everything through npx; a server that none of these can run is left out, saying what it needs
    (`check`, `search_docs` and the log show it as failed), never dropped unsaid."""
    repository = _git_toplevel((cwd or Path.cwd()).resolve())
    git_args = ["--repository", str(repository)] if repository is not None else []
    servers: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for name, package, args in (("time", "mcp-server-time", []), ("git", "mcp-server-git", git_args)):
        if (entry := _python_server(package, args)) is not None:
            servers[name] = entry
        else:
            unavailable[name] = (
                f"mcpServers.{name}: {package} is not installed beside the gateway and uvx is not on "
                f"PATH: pip install uv (or pip install {package}=={PYPI_SERVER_PINS[package]})"
            )
    for name in ("memory", "everything"):
        package = f"@modelcontextprotocol/server-{name}"
        if not _on_path("npx"):
            unavailable[name] = f"mcpServers.{name}: npx is not on PATH: install Node.js 20 or later"
            continue
        servers[name] = {
            "command": "npx",
            "args": ["-y", f"{package}@{NPM_SERVER_PINS[package]}"],
            "startup_timeout_seconds": _FETCH_STARTUP_TIMEOUT_SECONDS,
        }
    config = GatewayConfig.model_validate({"mcpServers": servers})
    config.set_origin(secret_names={}, config_dir=None, unavailable_servers=unavailable)
    return config
