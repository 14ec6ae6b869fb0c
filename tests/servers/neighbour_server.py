"""A child every caller's calls share, for the tests of what one caller's call leaves for another
(tests/e2e/test_shared_children.py). Over stdio: one process, one session, for every caller, as the
gateway runs a child.

- `reach_out(tag)` waits until two of its calls are in flight at once, then, inside each, sends the
  gateway everything a child may send its client during a call, each carrying `tag`: a log message,
  progress notifications, `resources/updated`, an elicitation and a sampling request. It answers
  what became of the two requests.
- `fail_loudly(text)` writes `text` to stderr and exits mid-call, as a child that crashes quoting
  its input does. The next start of the server then writes `neighbour restarting` to stderr and
  waits without serving, so that the gateway's child stays down (its start timing out) while the
  test looks at what callers are told.
- `keep(text)` keeps `text` as a resource (`neighbour://kept/<n>`), as servers that make resources
  during a call do (the reference `everything` server's `gzip_file_as_resource`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

GIVE_UP_SECONDS = 300  # a test whose second call never comes has failed long before this
CRASHED = Path(os.environ.get("NEIGHBOUR_CRASHED", "/nonexistent/neighbour.crashed"))
"""Written by `fail_loudly`; a start that finds it waits instead of serving."""


def build() -> MCPServer:
    server = MCPServer("neighbour")
    in_flight: list[str] = []
    together = anyio.Event()

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    @server.tool()
    async def reach_out(tag: str, ctx: Context) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        """Once two calls are in flight, send the client a log message, progress, resources/updated,
        an elicitation and a sampling request, each naming `tag`; answer what became of the requests."""
        in_flight.append(tag)
        if len(in_flight) >= 2:
            together.set()
        with anyio.fail_after(GIVE_UP_SECONDS):
            await together.wait()
        session, related = ctx.session, ctx.request_id
        log = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="error", data=f"log {tag}", logger=tag)
        )
        await session.send_notification(log, related)
        await session.send_notification(log)  # and on the connection, not the request
        for token in (0, 1, 2, tag, related):  # tokens a client may have used
            await session.send_progress_notification(
                token, 1, message=f"progress {tag}", related_request_id=related
            )
        await session.send_resource_updated(f"neighbour://updated/{tag}")
        outcomes: dict[str, Any] = {"together": sorted(in_flight)}
        try:
            answer = await session.elicit_form(
                f"elicit {tag}", {"type": "object", "properties": {}}, related_request_id=related
            )
            outcomes["elicitation"] = answer.model_dump(mode="json")
        except Exception as exc:
            outcomes["elicitation"] = f"refused: {exc}"
        sampling = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(role="user", content=types.TextContent(text=f"sample {tag}"))
                ],
                max_tokens=10,
            )
        )
        try:
            answer = await session.send_request(sampling, types.CreateMessageResult)
            outcomes["sampling"] = answer.model_dump(mode="json")
        except Exception as exc:
            outcomes["sampling"] = f"refused: {exc}"
        return outcomes

    @server.tool()
    def fail_loudly(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Write `text` to stderr and exit without answering; the next start waits instead of serving."""
        CRASHED.touch()
        print(f"cannot handle {text}", file=sys.stderr, flush=True)
        os._exit(3)

    kept: dict[str, str] = {}

    @server.tool()
    async def keep(text: str, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        """Keep `text` as a new resource, and tell the client the resource list changed."""
        uri = f"neighbour://kept/{len(kept) + 1}"
        kept[uri] = text

        def read() -> str:
            return kept[uri]

        server.resource(uri, name=f"kept {len(kept)}", mime_type="text/plain")(read)
        await ctx.session.send_resource_list_changed()
        return uri

    return server


if __name__ == "__main__":
    if CRASHED.exists():
        print("neighbour restarting", file=sys.stderr, flush=True)
        time.sleep(GIVE_UP_SECONDS)  # never serves: the gateway's start of it times out, or stops it
        sys.exit(1)
    build().run()
