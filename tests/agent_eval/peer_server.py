"""The peer: FastMCP CodeMode in front of the default children, over stdio. Runs in the peer's own venv
(`fastmcp[code-mode]==4.2.3`, `pydantic-monty==1.4.0`), never in the gateway's.

Usage: `python peer_server.py CHILDREN.json` (an `mcpServers` config). Each child gets one stdio proxy,
mounted under its name as namespace (tools `git_git_log`, `memory_read_graph`, ...). The proxies use
`mode="legacy"`: with the default (mirror the front connection's era), FastMCP 4.2.3 speaks 2026-07-28
to the children and rejects the reference Node servers' `tools/list`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastmcp import FastMCP  # type: ignore[import-not-found]
from fastmcp.client.transports import StdioTransport  # type: ignore[import-not-found]
from fastmcp.experimental.transforms.code_mode import CodeMode  # type: ignore[import-not-found]
from fastmcp.server import create_proxy  # type: ignore[import-not-found]


def build(config: Path) -> FastMCP:  # type: ignore[no-any-unimported]
    """A CodeMode server with one legacy-mode stdio proxy per child of `config`."""
    servers = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]
    app = FastMCP("codemode-peer")
    for name, entry in servers.items():
        transport = StdioTransport(entry["command"], entry.get("args", []), env=entry.get("env"))
        app.mount(create_proxy(transport, mode="legacy"), namespace=name)
    app.add_transform(CodeMode())
    return app


if __name__ == "__main__":
    build(Path(sys.argv[1])).run(show_banner=False)
