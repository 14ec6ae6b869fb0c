"""`make demo`: a real MCP client (the SDK's) drives the gateway over stdio on its default config.

It lists the gateway's tools, runs a few search_docs queries, and runs one execute_code whose
snippet chains tools from two child servers; every round trip is printed with its time.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

# Two children in one snippet: the time server's clock and the git server's log, joined in code.
SNIPPET = textwrap.dedent(
    """
    now = tools.time.get_current_time(timezone="UTC")
    log = tools.git.git_log(repo_path=REPO, max_count=5)
    commits = [line for line in str(log).splitlines() if line.lower().startswith("commit")]
    print("UTC now:", now["datetime"], "-", now["day_of_week"])
    {"recent_commits": len(commits), "tools_used": 2}
    """
)


def show(title: str, started: float, body: str) -> None:
    print(f"\n── {title}  ({(time.perf_counter() - started) * 1000:.1f} ms)")
    print(textwrap.indent(body.rstrip(), "   "))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call(
    session: ClientSession, title: str, tool: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    show(title, started, text_of(result))
    return result


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", *sys.argv[1:]])
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        show("initialize", started, f"server: {info.server_info.name} {info.server_info.version}")
        started = time.perf_counter()
        listed = await session.list_tools()
        size = len(
            json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools])
        )
        show("tools/list", started, f"{[t.name for t in listed.tools]}: {size} bytes of JSON")
        await call(session, "search_docs (overview)", "search_docs", {})
        await call(
            session,
            "search_docs 'current time in a timezone'",
            "search_docs",
            {"query": "current time in a timezone", "limit": 3},
        )
        await call(
            session, "search_docs 'commit history'", "search_docs", {"query": "commit history", "limit": 3}
        )
        snippet = SNIPPET.replace("REPO", repr(os.getcwd()))
        result = await call(
            session, "execute_code (time + git in one snippet)", "execute_code", {"code": snippet}
        )
        print(f"   the model reads {len(text_of(result).encode())} bytes")
        # The same snippet again with details=true: the full record a model asks for when it needs it.
        detailed = await session.call_tool("execute_code", {"code": snippet, "details": True})
        record = detailed.structured_content or {}
        calls = ", ".join(f"{c['tool']} {c['ms']:.1f} ms" for c in record.get("tool_calls", []))
        print(
            f"   with details=true: tool calls: {calls}; fuel {record.get('fuel', 0):,}; "
            f"{record.get('ms', 0):.1f} ms in the sandbox"
        )


if __name__ == "__main__":
    anyio.run(main)
