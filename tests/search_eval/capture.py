"""Capture `tools/list` from every installed search-eval server into catalog/<name>.json.

Not run in CI or by the tests. Usage, from the repo root, after install.py:

    .venv/bin/python -m tests.search_eval.capture            # every server in all three manifests
    .venv/bin/python -m tests.search_eval.capture slack git  # only these (snapshot-only ones are skipped)
    .venv/bin/python -m tests.search_eval.capture --no-network redis  # inside `unshare -n` (root)

Three manifests: servers.json (the tuning set's servers, snapshots in catalog/), blind/servers.json
(the blind set's, snapshots in blind/catalog/) and train/servers.json (training data only, snapshots in
train/catalog/); each snapshot goes to its own manifest's folder.

Each server runs over stdio with the official SDK client, in a fresh scratch directory that is also its
HOME, so no config or cache from the developer's home can change what it lists. An entry's `files`
are written into that directory first (a dummy OAuth client file for a server that will not start
without one). An entry's `stub_socket` is a Unix socket there that answers every HTTP request with
the same JSON body, for a server that asks a local daemon one question before it serves (Docker's API
version). The snapshots use the wire form of tests/data/tools/*.json. The tool counts in the
manifests are updated to match.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from mcp.client.stdio import StdioServerParameters

from tests.data.tools.capture import list_tools
from tests.search_eval.install import CACHE, MANIFESTS, REPO, npm_prefix

TIMEOUT_S = 60
BASE_ENV = {
    # A telemetry opt-out that several servers honour; none lists its tools differently for it.
    "DO_NOT_TRACK": "1",
    # mcp-atlassian renders a set() into a schema default, so its order follows Python's hash seed.
    "PYTHONHASHSEED": "0",
}


def _params(server: dict[str, Any], scratch: Path, npm: Path, no_network: bool) -> StdioServerParameters:
    def fill(text: str) -> str:
        return text.replace("{scratch}", str(scratch))

    for name, content in server.get("files", {}).items():
        (scratch / name).write_text(json.dumps(content), encoding="utf-8")
    if server["registry"] == "npm":
        command, args = "node", [str(npm / server["command"])]
    else:
        command, args = str(CACHE / "venvs" / server["name"] / server["command"]), []
    if no_network:  # a namespace with no interfaces: a listing that needs the network fails here
        command, args = "unshare", ["--net", command, *args]
    env = BASE_ENV | {"HOME": str(scratch)} | {k: fill(v) for k, v in server["env"].items()}
    return StdioServerParameters(
        command=command, args=[*args, *map(fill, server["args"])], env=env, cwd=scratch
    )


@asynccontextmanager
async def _stub_socket(path: Path | None, body: object) -> AsyncIterator[None]:
    """While open, a Unix socket at `path` answers each HTTP request with `body` as JSON (none if no path)."""
    if path is None:
        yield
        return
    payload = json.dumps(body).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    response = (head + "Connection: close\r\n\r\n").encode() + payload

    async def answer(stream: SocketStream) -> None:
        async with stream:
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    request += await stream.receive()
                await stream.send(response)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return  # the server hung up first; it only matters that it was answered if it asked

    listener = await anyio.create_unix_listener(path)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        yield
        tg.cancel_scope.cancel()


async def _capture(server: dict[str, Any], catalog: Path, npm: Path, no_network: bool) -> int:
    with tempfile.TemporaryDirectory(prefix=f"cg-search-eval-{server['name']}-") as scratch:
        stub = server.get("stub_socket")
        stub_path = Path(scratch) / stub["path"] if stub else None
        with anyio.fail_after(TIMEOUT_S):
            async with _stub_socket(stub_path, stub["body"] if stub else None):
                tools = await list_tools(_params(server, Path(scratch), npm, no_network))
    wire = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    out = catalog / f"{server['name']}.json"
    out.write_text(json.dumps(wire, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(tools)


async def _capture_servers(
    manifest: dict[str, Any], catalog: Path, only: set[str], no_network: bool
) -> list[str]:
    """Capture a manifest's servers into `catalog`, updating their tool counts; the names that failed."""
    failed: list[str] = []
    for server in manifest["servers"]:
        if "snapshot" in server or (only and server["name"] not in only):
            continue
        try:
            server["tools"] = await _capture(server, catalog, npm_prefix(manifest), no_network)
        except Exception as exc:  # one broken server must not stop the others being captured
            failed.append(server["name"])
            print(f"{server['name']}: FAILED ({type(exc).__name__}: {exc})")
            continue
        print(f"{server['name']}: {server['tools']} tools")
    return failed


def main(argv: list[str]) -> int:
    """Capture every manifest's servers (or those named) into the catalog/ beside each manifest."""
    only = {a for a in argv if not a.startswith("--")}
    failed: list[str] = []
    for path in MANIFESTS:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        catalog = path.parent / "catalog"
        catalog.mkdir(exist_ok=True)
        failed += anyio.run(_capture_servers, manifest, catalog, only, "--no-network" in argv)
        path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        total = sum(s["tools"] for s in manifest["servers"])
        where = path.relative_to(REPO)
        print(f"{where}: {len(manifest['servers'])} servers, {total} tools (snapshot-only ones included)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
