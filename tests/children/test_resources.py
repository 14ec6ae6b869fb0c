"""Whether a child offers resources, as its status says (search_docs names those that do)."""

from __future__ import annotations

import sys

import anyio
import pytest

from gateway.children import ChildPool
from gateway.children.config import StdioServer
from tests.real_servers import RESOURCE_SERVER, TINY_SERVER

pytestmark = pytest.mark.anyio

WAIT = 60  # real children start in seconds; this bounds a hang, not a race


async def test_a_child_offers_resources_while_it_lists_some_and_its_status_follows_its_list() -> None:
    servers = {
        "res": StdioServer(command=sys.executable, args=[str(RESOURCE_SERVER)]),
        # An MCPServer declares the resources capability with nothing behind it: it offers none.
        "tiny": StdioServer(command=sys.executable, args=[str(TINY_SERVER)]),
    }
    async with ChildPool(servers) as pool:
        with anyio.fail_after(WAIT):
            await pool.wait_ready()
            assert {s.name: s.resources for s in pool.statuses()} == {"res": True, "tiny": False}
            await pool.call_tool("res", "forget", {})  # it drops them all and says the list changed
            status = await pool.wait_status("res", lambda s: not s.resources)
    assert status.tools_version == 1  # its tools did not change
