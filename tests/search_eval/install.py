"""Install the search-eval MCP servers listed in servers.json, at their pinned versions.

Not run in CI or by the tests (they read the committed catalog/ snapshots). Usage, from the repo root:

    python tests/search_eval/install.py           # no-op when the pins have not changed
    python tests/search_eval/install.py --force   # reinstall anyway

npm packages go into one prefix, .cache/search-eval/npm. Each PyPI package gets its own venv,
.cache/search-eval/venvs/<name>: their dependencies clash with each other (mcp-atlassian and
mcp-server-fetch cannot share one) and must not touch the project's own .venv.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFEST = HERE / "servers.json"
CACHE = REPO / ".cache" / "search-eval"
NPM_PREFIX = CACHE / "npm"
VENVS = CACHE / "venvs"
STAMP = CACHE / "installed.sha256"
# --ignore-scripts: no postinstall may fetch a browser or a binary; listing tools needs none.
NPM_FLAGS = ("--save-exact", "--no-audit", "--no-fund", "--ignore-scripts")


def _load_servers() -> list[dict[str, Any]]:
    """The manifest's server entries, snapshot-only ones included."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["servers"]


def _installable(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Snapshot-only servers were captured elsewhere (tests/data/tools) and are not installed here.
    return [s for s in servers if "snapshot" not in s]


def _pins_hash(servers: list[dict[str, Any]]) -> str:
    # Only what decides the install goes in, so capture.py updating tool counts forces no reinstall.
    keys = ("name", "registry", "package", "version", "requires")
    pins = [{k: s.get(k) for k in keys} for s in _installable(servers)]
    return hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()


def _run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _install_npm(servers: list[dict[str, Any]]) -> None:
    deps = {s["package"]: s["version"] for s in servers if s["registry"] == "npm"}
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    # The manifest's pins, and only those: a package dropped from servers.json is pruned on install.
    package_json = {"name": "search-eval-servers", "private": True, "dependencies": deps}
    (NPM_PREFIX / "package.json").write_text(json.dumps(package_json, indent=2) + "\n")
    npm = shutil.which("npm") or "npm"
    _run(npm, "install", "--prefix", str(NPM_PREFIX), *NPM_FLAGS)


def _install_pypi(server: dict[str, Any]) -> None:
    venv = VENVS / server["name"]
    if venv.exists():
        shutil.rmtree(venv)  # a fresh venv, so an old pin's leftovers cannot linger
    _run(sys.executable, "-m", "venv", str(venv))
    pip = str(venv / "bin" / "pip")
    _run(pip, "install", "--quiet", f"{server['package']}=={server['version']}", *server.get("requires", []))


def main(argv: list[str]) -> None:
    """Install every non-snapshot server unless the stamp says these pins are already installed."""
    servers = _load_servers()
    digest = _pins_hash(servers)
    if "--force" not in argv and STAMP.exists() and STAMP.read_text().strip() == digest:
        print(f"search-eval servers already installed ({STAMP.relative_to(REPO)} matches servers.json)")
        return
    todo = _installable(servers)
    _install_npm(todo)
    for server in todo:
        if server["registry"] == "pypi":
            _install_pypi(server)
    STAMP.write_text(digest + "\n")
    print(f"installed {len(todo)} servers under {CACHE.relative_to(REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
