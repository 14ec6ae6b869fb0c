"""Test servers served over streamable HTTP from the test process: children a gateway reaches by URL,
with no process of their own (a Python child process spends about a CPU-second importing the SDK)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.real_servers import LEDGER_SERVER, Build, built, serve_asgi_app


@asynccontextmanager
async def http_children(
    servers: Mapping[str, Build], env: Mapping[str, str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """mcpServers entries (`{"type": "http", "url": ...}`) for `servers`, each served once on
    127.0.0.1 while inside, with `env` set in this process (the servers read it as their own)."""
    async with AsyncExitStack() as stack:
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        entries: dict[str, Any] = {}
        for name, build in servers.items():
            port, _ = await stack.enter_async_context(serve_asgi_app(build().streamable_http_app()))
            entries[name] = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
        yield entries


def ledger_over_http(directory: Path, **servers: Build) -> AbstractAsyncContextManager[dict[str, Any]]:
    """`http_children` with the ledger server (its entries in `directory/ledger.txt`, which
    `ledger_entries(directory)` reads) beside `servers`."""
    ledger = str(directory / "ledger.txt")
    return http_children({"ledger": built(LEDGER_SERVER), **servers}, {"LEDGER_FILE": ledger})
