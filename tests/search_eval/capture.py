"""Capture `tools/list` from every installed search-eval server into catalog/<name>.json.

Not run in CI or by the tests. Usage, from the repo root, after install.py:

    .venv/bin/python -m tests.search_eval.capture            # every server in servers.json
    .venv/bin/python -m tests.search_eval.capture slack git  # only these (snapshot-only ones are skipped)

Each server runs over stdio with the official SDK client, in a fresh scratch directory that is also its
HOME, so no config or cache from the developer's home can change what it lists. The snapshots use the
wire form of tests/data/tools/*.json. The tool counts in servers.json are updated to match.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters

from tests.data.tools.capture import list_tools

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFEST = HERE / "servers.json"
CATALOG = HERE / "catalog"
CACHE = REPO / ".cache" / "search-eval"
TIMEOUT_S = 60
BASE_ENV = {
    # A telemetry opt-out that several servers honour; none lists its tools differently for it.
    "DO_NOT_TRACK": "1",
    # mcp-atlassian renders a set() into a schema default, so its order follows Python's hash seed.
    "PYTHONHASHSEED": "0",
}


def _params(server: dict[str, Any], scratch: Path) -> StdioServerParameters:
    def fill(text: str) -> str:
        return text.replace("{scratch}", str(scratch))

    if server["registry"] == "npm":
        command, args = "node", [str(CACHE / "npm" / server["command"])]
    else:
        command, args = str(CACHE / "venvs" / server["name"] / server["command"]), []
    env = BASE_ENV | {"HOME": str(scratch)} | {k: fill(v) for k, v in server["env"].items()}
    return StdioServerParameters(
        command=command, args=[*args, *map(fill, server["args"])], env=env, cwd=scratch
    )


async def _capture(server: dict[str, Any]) -> int:
    with tempfile.TemporaryDirectory(prefix=f"cg-search-eval-{server['name']}-") as scratch:
        with anyio.fail_after(TIMEOUT_S):
            tools = await list_tools(_params(server, Path(scratch)))
    wire = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    out = CATALOG / f"{server['name']}.json"
    out.write_text(json.dumps(wire, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(tools)


async def _main(only: set[str]) -> int:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    CATALOG.mkdir(exist_ok=True)
    failed: list[str] = []
    for server in manifest["servers"]:
        if "snapshot" in server or (only and server["name"] not in only):
            continue
        try:
            server["tools"] = await _capture(server)
        except Exception as exc:  # one broken server must not stop the others being captured
            failed.append(server["name"])
            print(f"{server['name']}: FAILED ({type(exc).__name__}: {exc})")
            continue
        print(f"{server['name']}: {server['tools']} tools")
    MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    total = sum(s["tools"] for s in manifest["servers"])
    print(f"catalog: {len(manifest['servers'])} servers, {total} tools (snapshot-only ones included)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(_main, set(sys.argv[1:])))
