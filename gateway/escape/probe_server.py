"""A tiny real MCP server for the policy and secret cases of `sandbox-test`, run as a child by the suite.

Its tools touch nothing outside the process: they answer from their arguments and the process's
environment, so the suite can check what the gateway's policy lets through and what its redaction
lets out. Notes and counters live in its memory, so the suite can see which calls reached it.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections import Counter

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

__all__ = ["build", "build_shift"]

# The pipe the protocol runs on: the SDK's stdio server moves it off fd 1 (pointing fd 1 at stderr,
# so stray prints stay off the wire), and `flood_stdout` must reach the wire as a rogue child would.
_wire = [1]

_READ = ToolAnnotations(read_only_hint=True)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True)


def build() -> MCPServer:
    """The probe server's tools (reads, writes and an admin tool that the suite's policy constrains)."""
    server = MCPServer("probe")

    @server.tool(annotations=_READ)
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool(annotations=_READ)
    def read_note(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to read a note (nothing is read)."""
        return f"note {name}"

    # What the approvals cases observe: every text write_note was given (a side effect the suite can
    # count, in this process's memory only), and counters that show how often a call reached here.
    written: dict[str, list[str]] = {}
    ticks: Counter[str] = Counter()

    @server.tool(annotations=_WRITE)
    def write_note(name: str, text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Keep a note in memory (every text written under a name, in order)."""
        written.setdefault(name, []).append(text)
        return f"wrote {len(text)} characters to {name}"

    @server.tool(annotations=_READ)
    def notes() -> dict[str, list[str]]:  # pyright: ignore[reportUnusedFunction]
        """Every note written so far: each name with the texts written under it, in order."""
        return written

    @server.tool(annotations=_READ)
    def tick(name: str) -> int:  # pyright: ignore[reportUnusedFunction]
        """Count one more call under `name` and return the count (1 for the first call ever)."""
        ticks[name] += 1
        return ticks[name]

    @server.tool(annotations=_WRITE)
    def write_file(content: str, path: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to write a file (nothing is written); calls need the user's approval."""
        return f"wrote {len(content)} characters to {path}"

    @server.tool(annotations=_WRITE)
    def create_entities(entities: list[dict[str, str]]) -> int:  # pyright: ignore[reportUnusedFunction]
        """Pretend to create entities (nothing is created); calls need the user's approval."""
        return len(entities)

    @server.tool(annotations=_WRITE)
    def delete_all() -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to delete everything (nothing is deleted)."""
        return "deleted everything"

    @server.tool(annotations=_WRITE)
    def internal_admin() -> str:  # pyright: ignore[reportUnusedFunction]
        """An administrative tool the suite's policy hides."""
        return "admin"

    @server.tool(annotations=_READ)
    def count() -> int:  # pyright: ignore[reportUnusedFunction]
        """A call the suite's policy rate-limits."""
        return 1

    @server.tool(annotations=_READ)
    def reveal(name: str) -> str | None:  # pyright: ignore[reportUnusedFunction]
        """The value of one of this process's environment variables (a child echoing a secret)."""
        return os.environ.get(name)

    @server.tool(annotations=_READ)
    def reveal_in_error(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Fail with the value of an environment variable in the error message."""
        raise ToolError(f"cannot proceed with {os.environ.get(name)}")

    @server.tool(annotations=_READ)
    def reveal_number(name: str) -> int | None:  # pyright: ignore[reportUnusedFunction]
        """An environment variable's value as a number (a child answering with a bare number)."""
        value = os.environ.get(name)
        return int(value) if value is not None and value.isdigit() else None

    token = os.environ.get("PROBE_TOKEN", "")

    # A child that puts a credential in its own docs (an API URL with its key, as some do): the text
    # reaches search_docs and the snippet's help(), search() and __doc__.
    @server.tool(annotations=_READ, description=f"Look a key up at https://api.example.com/?key={token}")
    def documented(key: str = token) -> str:  # pyright: ignore[reportUnusedFunction]
        return f"looked up {len(key)} characters"

    @server.tool(annotations=_READ)
    def echo_in_error(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Fail, quoting the argument in the error message (as many validators do)."""
        raise ToolError(f"bad input: {text}")

    @server.tool(annotations=_READ)
    def tag_count(tags: set[str]) -> int:  # pyright: ignore[reportUnusedFunction]
        """How many distinct tags were given (its schema says uniqueItems)."""
        return len(tags)

    @server.tool(annotations=_READ)
    def label_count(labels: list[str] | str) -> int:  # pyright: ignore[reportUnusedFunction]
        """How many labels were given, as a list or one string (its schema says anyOf)."""
        return 1 if isinstance(labels, str) else len(labels)

    @server.tool(annotations=_READ)
    def read_file(path: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to read a file (nothing is read): the suite's policy constrains the path."""
        return f"read {path}"

    @server.tool(annotations=_READ)
    def read_path(path: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to read a path (nothing is read): the suite's policy keeps it out of /srv/secrets."""
        return f"read {path}"

    @server.tool(annotations=_READ, structured_output=False)
    def profile(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """A person's record as JSON text, with no output schema: its field names carry the name."""
        return json.dumps({f"{name}_review": "due", "salary": 1})

    @server.tool(annotations=_READ, structured_output=False)
    def echo_json(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """`text` back as the answer, with no output schema: JSON text shapes what calls return."""
        return text

    @server.tool(annotations=_READ)
    def big_answer(size: int) -> str:  # pyright: ignore[reportUnusedFunction]
        """An answer of `size` characters (a child answering with far more than anyone asked)."""
        return "b" * size

    @server.tool(annotations=_READ)
    async def slow(seconds: float) -> str:  # pyright: ignore[reportUnusedFunction]
        """Answer after `seconds` (a child that takes its time)."""
        await anyio.sleep(seconds)
        return "done"

    in_flight = [0, 0]  # calls of `overlap` now, and the most there ever were at once
    peaks: dict[int, anyio.Event] = {}  # set once that many calls were in flight at once

    @server.tool(annotations=_READ)
    async def overlap(seconds: float, meet: int = 0) -> int:  # pyright: ignore[reportUnusedFunction]
        """Wait until `meet` calls of this tool were in flight at once, then take `seconds`; answer the
        most calls of it that were ever in flight at once."""
        in_flight[0] += 1
        in_flight[1] = max(in_flight)
        for count, reached in peaks.items():
            if count <= in_flight[1]:
                reached.set()
        try:
            # A meeting, not a pause: the calls the gateway lets through together overlap however slowly
            # they arrive, and the ones it holds back would not be waited for.
            if in_flight[1] < meet:
                await peaks.setdefault(meet, anyio.Event()).wait()
            await anyio.sleep(seconds)
        finally:
            in_flight[0] -= 1
        return in_flight[1]

    @server.tool(annotations=_READ)
    def big_error(size: int) -> CallToolResult:  # pyright: ignore[reportUnusedFunction]
        """Fail with an error message of `size` characters (a child failing at great length)."""
        # Returned, not raised: the SDK would also log a raised error's message, at length.
        return CallToolResult(content=[TextContent(type="text", text="e" * size)], is_error=True)

    @server.tool(annotations=_READ)
    async def chatty(count: int, size: int, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        """Send `count` log notifications of `size` characters each, then answer (a child flooding)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated in the protocol, and still sent
            for _ in range(count):
                await ctx.log("info", "n" * size)  # pyright: ignore[reportDeprecated]
        return "done"

    @server.tool(annotations=_READ)
    def flood_stdout(size: int) -> str:  # pyright: ignore[reportUnusedFunction]
        """Write a line of `size` bytes to the wire outside the protocol, then answer (a flooding child)."""
        block = memoryview(b"x" * min(size, 1 << 20))
        left = size
        while left > 0:
            left -= os.write(_wire[0], block[: min(left, len(block))])
        os.write(_wire[0], b"\n")
        return "flooded"

    # Resources the suite reads through `resources.probe`: a public note, one that quotes the probe's
    # token (redaction), one the suite's policy denies and one it hides.
    @server.resource("note://public", mime_type="text/plain")
    def public_note() -> str:  # pyright: ignore[reportUnusedFunction]
        """A note anyone may read."""
        return "public note"

    @server.resource("note://token", mime_type="text/plain")
    def token_note() -> str:  # pyright: ignore[reportUnusedFunction]
        """A note quoting the probe's token (a child leaking a secret in a resource)."""
        return f"token={os.environ.get('PROBE_TOKEN', '')}"

    @server.resource("secret://vault", mime_type="text/plain")
    def vault() -> str:  # pyright: ignore[reportUnusedFunction]
        """What the suite's policy denies."""
        return "the vault"

    @server.resource("hidden://admin", mime_type="text/plain")
    def admin_note() -> str:  # pyright: ignore[reportUnusedFunction]
        """What the suite's policy hides."""
        return "admin only"

    # A template whose parameters the SDK percent-decodes: the suite's policy hides
    # `repo://acme/secrets/*` and denies `repo://acme/private/*`.
    @server.resource("repo://{owner}/{repo}/{name}", mime_type="text/plain")
    def repo_file(owner: str, repo: str, name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """A file of a repository (its path, said back)."""
        return f"contents of {owner}/{repo}/{name}"

    return server


def build_shift() -> MCPServer:
    """A server whose tool list changes under a rule: `drop-all` (destructive, `drop_all` in Python),
    and `grow()`, which adds a harmless tool spelled `drop_all` and says the tool list changed."""
    server = MCPServer("shift")

    @server.tool(name="drop-all", annotations=_WRITE)
    def drop_all_destructive() -> str:  # pyright: ignore[reportUnusedFunction]
        """Pretend to drop everything (the tool the suite's policy denies)."""
        return "dropped everything"

    @server.tool(annotations=_READ)
    async def grow(ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        """Add a harmless `drop_all` and send tools/list_changed."""

        def drop_all() -> str:
            return "dropped nothing"

        server.add_tool(drop_all, name="drop_all", description="Drops nothing.", annotations=_READ)
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server


if __name__ == "__main__":
    _wire[0] = os.dup(1)
    (build_shift() if sys.argv[1:] == ["shift"] else build()).run()
