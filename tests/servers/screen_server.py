"""A real MCP server whose tools a model calls directly (the `expose` tests), over stdio.

`screenshot` answers an image (a real PNG) and a caption, `status` structured content holding the
value of SCREEN_TOKEN (a secret the gateway must redact), `broken` a tool error.
"""

from __future__ import annotations

import base64
import os
import struct
import sys
import zlib

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


SCREENSHOT = png(4, 3, (200, 30, 30))
"""What `screenshot` shows: 4x3 red pixels."""


def build() -> MCPServer:
    """The server: `screenshot`, `status` and `broken`."""
    server = MCPServer("screen")

    @server.tool(
        title="Take a screenshot",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    def screenshot(label: str = "screen") -> CallToolResult:  # pyright: ignore[reportUnusedFunction]
        """Capture the screen as a PNG image."""
        image = ImageContent(data=base64.b64encode(SCREENSHOT).decode(), mime_type="image/png")
        return CallToolResult(content=[image, TextContent(text=f"screenshot of {label}")])

    @server.tool()
    def status() -> dict[str, str]:  # pyright: ignore[reportUnusedFunction]
        """The screen's session, with the token it was started with."""
        return {"session": "open", "token": os.environ.get("SCREEN_TOKEN", "")}

    @server.tool()
    def broken() -> str:  # pyright: ignore[reportUnusedFunction]
        """Always fails."""
        raise ValueError("the screen is off")

    return server


if __name__ == "__main__":
    print("screen server starting", file=sys.stderr, flush=True)
    build().run()
