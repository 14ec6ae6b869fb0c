"""`/readyz` in process, on a real gateway: not ready until the sandbox is loaded, ready once it is."""

from __future__ import annotations

import anyio
import pytest

from gateway import Gateway
from gateway.config import parse_config
from gateway.errors import StateUnavailable
from gateway.server._health import Readiness
from tests.state.redis_server import PATIENT, RedisServer

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
        "state": "off",
    }
    assert not draining


async def test_readyz_says_when_the_shared_store_is_down_and_back_while_the_gateway_stays_ready(
    redis_server: RedisServer, redis_url: str
) -> None:
    says: list[tuple[bool, str]] = []
    async with Gateway(parse_config({"state": {"url": redis_url, **PATIENT}}, "team.json", {})) as gateway:
        readiness = Readiness(gateway, lambda: False)
        with anyio.fail_after(60):
            await gateway.sandbox()
            says.append(said(readiness))
            redis_server.stop()
            with pytest.raises(StateUnavailable):  # a command finds the store gone
                await gateway.stores.approvals.spend("probe", 60)
            says.append(said(readiness))
            redis_server.start()
            while gateway.stores.health != "ok":  # noqa: ASYNC110  (the reconnect loop's backoff)
                await anyio.sleep(0.05)
            says.append(said(readiness))
    assert says == [(True, "ok"), (True, "unavailable"), (True, "ok")]


def said(readiness: Readiness) -> tuple[bool, str]:
    ready, body = readiness.check()
    return ready, body["state"]
