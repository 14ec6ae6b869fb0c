"""An experiment, not a benchmark row: the bytes a model reads from search_docs and help() on the
reference children, over the real gateway process, for one sequence of calls (the overview, a search,
a call, the same search, a server's listing, help inside a snippet). Run it on two checkouts to
compare what they show; `--show` prints the answers too.

    PYTHONPATH=$PWD .venv/bin/python tests/bench/search_docs_bytes.py [--show]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, types

from tests.e2e.gateway_process import search_docs, session, write_config
from tests.real_servers import npm_entry_point

WAIT = 120


def _repo(directory: Path) -> Path:
    repo = directory / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    (repo / "a.md").write_text("x\n", encoding="utf-8")
    subprocess.run([*git, "add", "a.md"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, timeout=30)
    return repo


def _config(directory: Path) -> dict[str, Any]:
    def npm(package: str) -> dict[str, Any]:
        return {"command": "node", "args": [str(npm_entry_point(package))]}

    git = {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(_repo(directory))]}
    memory = npm("@modelcontextprotocol/server-memory") | {
        "env": {"MEMORY_FILE_PATH": str(directory / "m.jsonl")}
    }
    return {
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
            "git": git,
            "everything": npm("@modelcontextprotocol/server-everything"),
            "memory": memory,
        }
    }


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def _measure(client: ClientSession, repo: Path, show: bool) -> None:
    steps: list[tuple[str, dict[str, Any]]] = [
        ("search_docs", {}),
        ("search_docs", {"query": "git log"}),
        ("execute_code", {"code": f"log = tools.git.git_log(repo_path={str(repo)!r})"}),
        ("search_docs", {"query": "git log"}),
        ("execute_code", {"code": "links = tools.everything.get_resource_links(count=2)"}),
        ("execute_code", {"code": "help(tools.everything.get_resource_links)"}),
        ("search_docs", {"server": "everything"}),
        ("execute_code", {"code": "help(tools.everything)"}),
    ]
    await search_docs(client)  # every child listed first: the figures are of a settled catalog
    for tool, arguments in steps:
        with anyio.fail_after(WAIT):
            answer = _text(await client.call_tool(tool, arguments))
        print(f"{len(answer.encode()):>6} B  {tool} {json.dumps(arguments)}")
        if show:
            print(answer, end="\n\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--show", action="store_true", help="print each answer too")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = write_config(directory, _config(directory))
        async with session(config) as client:
            await _measure(client, directory / "repo", options.show)


if __name__ == "__main__":
    anyio.run(main)
