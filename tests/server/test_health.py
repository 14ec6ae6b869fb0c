"""`/readyz` in process, on a real gateway: not ready until the sandbox is loaded, ready once it is,
and saying so while the gateway shuts down."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from gateway import Gateway
from gateway.config import parse_config
from gateway.config.server import HttpConfig
from gateway.errors import StateUnavailable
from gateway.server._health import Readiness
from gateway.server._http_app import HttpApp
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


async def test_once_the_grace_period_ends_probes_still_answer_shutting_down_and_mcp_is_refused() -> None:
    async with Gateway(parse_config({}, "team.json", {})) as gateway:
        app = HttpApp(gateway, HttpConfig())
        with anyio.fail_after(60):
            await gateway.sandbox()
            await app.drain(grace_seconds=0)  # nothing in flight: closed at once
            async with httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app), base_url="http://gw"
            ) as client:
                ready = await client.get("/readyz")
                alive = await client.get("/healthz")
                mcp = await client.post(HttpConfig().path, json={})
    assert (ready.status_code, ready.json()["shutting_down"]) == (503, True)
    assert alive.json() == {"alive": True}
    assert mcp.status_code == 503
    assert "shutting down" in mcp.text
