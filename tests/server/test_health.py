"""`/readyz` in process, on a real gateway: not ready until the sandbox is loaded, ready once it is."""

from __future__ import annotations

import anyio
import pytest

from gateway import Gateway
from gateway.config import parse_config
from gateway.server._health import Readiness

pytestmark = pytest.mark.anyio


async def test_not_ready_while_the_sandbox_loads_ready_once_it_has_and_not_ready_while_shutting_down() -> (
    None
):
    shutting_down = False
    async with Gateway(parse_config({}, "team.json", {})) as gateway:
        readiness = Readiness(gateway, lambda: shutting_down)
        loading, while_loading = readiness.check()  # entering returned at once: the load runs behind
        with anyio.fail_after(60):
            await gateway.sandbox()
        ready, once_loaded = readiness.check()
        shutting_down = True
        draining, _ = readiness.check()
    assert (loading, while_loading["sandbox"]) == (False, "loading")
    assert ready, once_loaded
    assert once_loaded == {
        "ready": True,
        "config": "loaded",
        "sandbox": "ready",
        "children": {},
        "shutting_down": False,
    }
    assert not draining
