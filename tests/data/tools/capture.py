"""Regenerate the `tools/list` fixtures by running the five real child servers over stdio.

Not run in CI. Usage, from the repo root:

    npm install --prefix /tmp/cg-npm @modelcontextprotocol/server-everything@VERSION \\
        @modelcontextprotocol/server-memory@VERSION @modelcontextprotocol/server-filesystem@VERSION
    .venv/bin/python tests/data/tools/capture.py /tmp/cg-npm

Then record the versions in README.md beside this file.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Tool

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
VENV_BIN = REPO / ".venv" / "bin"


def _servers(npm_prefix: Path, scratch: Path) -> dict[str, StdioServerParameters]:
    def node(package: str, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
        entry = npm_prefix / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
        return StdioServerParameters(command="node", args=[str(entry), *args], env=env)

    return {
        "time": StdioServerParameters(command=str(VENV_BIN / "mcp-server-time")),
        "git": StdioServerParameters(
            command=str(VENV_BIN / "mcp-server-git"), args=["--repository", str(REPO)]
        ),
        "everything": node("server-everything", "stdio"),
        "memory": node("server-memory", env={"MEMORY_FILE_PATH": str(scratch / "memory.jsonl")}),
        "filesystem": node("server-filesystem", str(scratch)),
    }


async def list_tools(params: StdioServerParameters) -> list[Tool]:
    """Every page of one server's `tools/list`, over stdio with the SDK's client."""
    tools: list[Tool] = []
    async with Client(params) as client:
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools


async def _main(npm_prefix: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="cg-capture-") as scratch:
        for name, params in _servers(npm_prefix, Path(scratch)).items():
            tools = await list_tools(params)
            wire = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
            out = HERE / f"{name}.json"
            out.write_text(json.dumps(wire, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{name}: {len(tools)} tools -> {out.relative_to(REPO)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: capture.py NPM_PREFIX (where the three npm servers are installed)")
    anyio.run(_main, Path(sys.argv[1]))
