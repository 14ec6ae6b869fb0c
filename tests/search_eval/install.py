"""Install the search-eval MCP servers listed in servers.json, at their pinned versions.

Not run in CI or by the tests (they read the committed catalog/ snapshots). Usage, from the repo root:

    python tests/search_eval/install.py           # no-op when the pins have not changed
    python tests/search_eval/install.py --force   # reinstall anyway
    python tests/search_eval/install.py redis     # only these PyPI venvs (npm is always installed whole)

Three manifests are read: servers.json, blind/servers.json (the blind set's servers, see
blind/README.md) and train/servers.json (training data only, see train/README.md); each server keeps
its manifest's catalog folder when captured.

npm packages go into one prefix, .cache/search-eval/npm, except those of a manifest naming its own
`npm_prefix` folder (train/servers.json: .cache/search-eval/npm-train). npm hoists shared
dependencies by what else is in the prefix, and with the training servers beside them two tuning and
blind servers get a newer zod and list different schemas. Each PyPI package gets its own venv,
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
MANIFESTS = (HERE / "servers.json", HERE / "blind" / "servers.json", HERE / "train" / "servers.json")
CACHE = REPO / ".cache" / "search-eval"
VENVS = CACHE / "venvs"
STAMP = CACHE / "installed.sha256"
# --ignore-scripts: no postinstall may fetch a browser or a binary; listing tools needs none.
NPM_FLAGS = ("--save-exact", "--no-audit", "--no-fund", "--ignore-scripts")


def _load_manifests() -> list[dict[str, Any]]:
    """Every manifest, snapshot-only entries included."""
    return [json.loads(m.read_text(encoding="utf-8")) for m in MANIFESTS]


def npm_prefix(manifest: dict[str, Any]) -> Path:
    """Where a manifest's npm servers are installed: its own `npm_prefix` folder, or the shared one."""
    return CACHE / manifest.get("npm_prefix", "npm")


def _installable(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Snapshot-only servers were captured elsewhere (tests/data/tools) and are not installed here.
    return [s for s in servers if "snapshot" not in s]


def _pins_hash(manifests: list[dict[str, Any]]) -> str:
    # Only what decides the install goes in, so capture.py updating tool counts forces no reinstall.
    keys = ("name", "registry", "package", "version", "requires", "python")
    pins = [
        [str(npm_prefix(m)), [{k: s.get(k) for k in keys} for s in _installable(m["servers"])]]
        for m in manifests
    ]
    return hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()


def _run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _npm_groups(manifests: list[dict[str, Any]]) -> dict[Path, list[dict[str, Any]]]:
    """The npm servers to install, by prefix."""
    groups: dict[Path, list[dict[str, Any]]] = {}
    for manifest in manifests:
        servers = [s for s in _installable(manifest["servers"]) if s["registry"] == "npm"]
        groups.setdefault(npm_prefix(manifest), []).extend(servers)
    return groups


def _install_npm(prefix: Path, servers: list[dict[str, Any]]) -> None:
    deps = {s["package"]: s["version"] for s in servers}
    prefix.mkdir(parents=True, exist_ok=True)
    # The manifests' pins, and only those: a package dropped from a manifest is pruned on install.
    package_json = {"name": "search-eval-servers", "private": True, "dependencies": deps}
    (prefix / "package.json").write_text(json.dumps(package_json, indent=2) + "\n")
    npm = shutil.which("npm") or "npm"
    _run(npm, "install", "--prefix", str(prefix), *NPM_FLAGS)


def _python(version: str | None) -> str:
    """The interpreter for a server's venv: this one, or the `python` version its entry asks for."""
    if version is None:
        return sys.executable
    # A pyenv shim exists for every installed version but runs only the selected one, so look past it.
    installed = sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python{version}"))
    found = str(installed[-1]) if installed else shutil.which(f"python{version}")
    if found is None:
        sys.exit(f"python{version} is not installed, and a server in the manifests needs it")
    return found


def _install_pypi(server: dict[str, Any]) -> None:
    venv = VENVS / server["name"]
    if venv.exists():
        shutil.rmtree(venv)  # a fresh venv, so an old pin's leftovers cannot linger
    _run(_python(server.get("python")), "-m", "venv", str(venv))
    pip = str(venv / "bin" / "pip")
    _run(pip, "install", "--quiet", f"{server['package']}=={server['version']}", *server.get("requires", []))


def main(argv: list[str]) -> None:
    """Install every non-snapshot server unless the stamp says these pins are already installed."""
    manifests = _load_manifests()
    only = {a for a in argv if not a.startswith("--")}
    digest = _pins_hash(manifests)
    if not only and "--force" not in argv and STAMP.exists() and STAMP.read_text().strip() == digest:
        print(f"search-eval servers already installed ({STAMP.relative_to(REPO)} matches the manifests)")
        return
    todo = [s for m in manifests for s in _installable(m["servers"])]
    for prefix, servers in _npm_groups(manifests).items():
        _install_npm(prefix, servers)  # each prefix whole, so installing some must not prune the others
    venvs = [s for s in todo if s["registry"] == "pypi" and (not only or s["name"] in only)]
    for server in venvs:
        _install_pypi(server)
    if not only:  # a partial install leaves the stamp alone, so the next full run does the rest
        STAMP.write_text(digest + "\n")
    npm = sum(1 for s in todo if s["registry"] == "npm")
    print(f"installed {npm} npm servers and {len(venvs)} PyPI venvs under {CACHE.relative_to(REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
