"""A misbehaving MCP server for the fault tests, over stdio; its tools and flags choose how.

    --stdout-noise TEXT    print TEXT to stdout (not MCP), then serve
    --flood-stderr BYTES   write 4 MiB of short lines and one line of BYTES to stderr, then serve
    --grandchild           start a grandchild that ignores SIGTERM and its stdin, then serve

Faults that need no MCP at all (exiting at startup, never speaking MCP) are `python -c` one-liners
in the tests: they start in milliseconds, where importing the SDK takes a second.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer

# The SDK points fd 1 at stderr while it serves, so stray prints miss the wire; this copy does not.
WIRE_FD = os.dup(1)
GRANDCHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def build(grandchild: int | None = None) -> MCPServer:
    """The server: `echo` answers, the others hang, wedge, die, write noise or change the tool list."""
    server = MCPServer("fault")
    cancelled: list[str] = []

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool()
    async def hang() -> str:  # pyright: ignore[reportUnusedFunction]
        """Never answer; a cancellation from the client is counted."""
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append("hang")
            raise
        return "unreachable"

    @server.tool()
    def cancellations() -> int:  # pyright: ignore[reportUnusedFunction]
        """How many calls the client has cancelled so far."""
        return len(cancelled)

    @server.tool()
    async def wedge() -> str:  # pyright: ignore[reportUnusedFunction]
        """Block the server's event loop: from now on it answers nothing."""
        time.sleep(3600)  # noqa: ASYNC251 - the point: a wedged server
        return "unreachable"

    @server.tool()
    def die() -> str:  # pyright: ignore[reportUnusedFunction]
        """Exit the server process at once, without answering."""
        os._exit(3)

    @server.tool()
    async def noise(answer: bool) -> str:  # pyright: ignore[reportUnusedFunction]
        """Write a line that is not JSON to the wire, then answer (or never answer)."""
        os.write(WIRE_FD, b"this is not JSON\n")
        if not answer:
            await anyio.sleep_forever()
        return "answered"

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        """Register a new tool called `name` and tell the client the tool list changed."""

        def added() -> str:
            return f"{name} answers"

        server.add_tool(added, name=name, description="Added at run time.")
        await ctx.session.send_tool_list_changed()
        return "added"

    @server.tool()
    def pids() -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        """This process, its parent, its process group, its grandchild (if started), and the gateway's pid."""
        gateway = int(os.environ.get("CODEMODE_GATEWAY_PARENT", "0"))
        return {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "pgid": os.getpgid(0),
            "grandchild": grandchild,
            "gateway": gateway,
        }

    return server


def start_grandchild() -> int:
    """A process in our group that outlives us unless someone kills the group."""
    process = subprocess.Popen(
        [sys.executable, "-c", GRANDCHILD], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    process.stdout.readline()  # SIGTERM is ignored from here on
    process.stdout.close()
    return process.pid


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdout-noise")
    parser.add_argument("--flood-stderr", type=int, default=0)
    parser.add_argument("--grandchild", action="store_true")
    args = parser.parse_args()
    if args.stdout_noise:
        os.write(WIRE_FD, args.stdout_noise.encode() + b"\n")
    if args.flood_stderr:
        line = b"flood " * 15 + b"\n"
        sys.stderr.buffer.write(line * (4 * 1024 * 1024 // len(line)))
        sys.stderr.buffer.write(b"x" * args.flood_stderr + b"\n")
        sys.stderr.buffer.write(b"flood done\n")
        sys.stderr.buffer.flush()
    grandchild = start_grandchild() if args.grandchild else None
    build(grandchild).run()


if __name__ == "__main__":
    main()
