"""Who is calling, over HTTP through the real gateway process: API tokens checked before anything
runs, a 401 with the challenge otherwise, and the principal as the caller the caps count.

One gateway serves every test of the module: three principals, a role that narrows bob's reach, and a
per-caller cap of one execution in flight; each test reads only the audit records of the principals it
names."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode

from tests.e2e.gateway_http import WAIT, HttpGateway, http_client, http_gateway
from tests.e2e.gateway_process import cli, environment, write_config
from tests.e2e.http_children import built, http_children
from tests.real_servers import SERVERS

pytestmark = pytest.mark.anyio

ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 40
CAROL = "carol-token-" + "c" * 40
ENV = {"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB, "CAROL_TOKEN": CAROL}


@dataclass(frozen=True)
class Served:
    gateway: HttpGateway
    config: Path
    home: Path  # the latch child's files go here


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def latch() -> AsyncIterator[dict[str, Any]]:
    """One child for every test (echo, pid, and wait_for to hold a run), served over HTTP from this
    process: a child process costs about a CPU-second."""
    async with http_children({"latch": built(SERVERS / "latch_server.py")}) as children:
        yield children


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory, latch: dict[str, Any]) -> AsyncIterator[Served]:
    home = tmp_path_factory.mktemp("http-auth")
    config = write_config(
        home,
        {
            "mcpServers": latch,
            "audit": {"path": str(home / "audit.jsonl")},
            "auth": {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}", "carol": "${CAROL_TOKEN}"}},
            "http": {"max_executions_in_flight_per_caller": 1, "max_executions_queued_per_caller": 0},
            "policy": {
                "roles": {
                    "contractor": {"principals": ["bob"], "deny": ["latch.echo"], "hidden": ["latch.pid"]}
                }
            },
        },
    )
    async with http_gateway(config, env=environment(ENV)) as gateway:
        yield Served(gateway, config, home)


async def test_only_a_configured_token_reaches_the_gateway_on_both_eras(served: Served) -> None:
    gateway = served.gateway
    async with httpx2.AsyncClient() as http:
        with anyio.fail_after(WAIT):
            missing = await http.post(gateway.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            wrong = await http.post(
                gateway.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Authorization": f"Bearer {ALICE[:-1]}x"},
            )
            probe = await http.get(gateway.base + "/healthz")
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
    assert probe.status_code == 200  # probes stay open: a load balancer has no token
    modes: tuple[ConnectMode, ...] = ("auto", "legacy")
    for mode in modes:
        async with http_client(gateway.url, mode, token=ALICE) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool(
                    "execute_code", {"code": "tools.latch.echo(text='hi')", "details": True}
                )
        assert result.structured_content is not None
        assert result.structured_content["value"] == {"result": "hi"}
    assert not any(ALICE in str(record) for record in gateway.logs)


async def test_the_per_caller_cap_counts_each_principal_apart(served: Served) -> None:
    release = served.home / "release"
    # Alice's first run holds her one place until the test releases it, however slow the machine is.
    held = {"code": f"tools.latch.wait_for(path={str(release)!r})", "details": True}
    slow = {"code": "'second'", "details": True}
    outcomes: dict[str, types.CallToolResult | Exception] = {}

    async def run(name: str, client: Client, code: dict[str, Any]) -> None:
        try:
            outcomes[name] = await client.call_tool("execute_code", code)
        except Exception as exc:  # a refusal arrives as the request's error
            outcomes[name] = exc

    async with (
        http_client(served.gateway.url, token=ALICE) as alice,
        http_client(served.gateway.url, token=BOB) as bob,
    ):
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "alice-first", alice, held)
                while not release.with_name("release.waiting").exists():  # noqa: ASYNC110 (the child makes it)
                    await anyio.sleep(0.02)
                await run("alice-second", alice, slow)
                await run("bob", bob, {"code": "'bob ran'", "details": True})
                release.touch()
    assert isinstance(outcomes["alice-second"], Exception)
    assert "max_executions_in_flight_per_caller" in str(outcomes["alice-second"])
    for name, value in (("bob", "bob ran"), ("alice-first", {"result": "released"})):
        result = outcomes[name]
        assert isinstance(result, types.CallToolResult), result
        assert result.structured_content is not None
        assert result.structured_content["value"] == value


async def test_the_audit_log_names_the_principal_and_filters_by_it(served: Served) -> None:
    # carol: a principal no other test of the module calls as, with no role.
    for token, text in ((ALICE, "from alice"), (CAROL, "from carol")):
        async with http_client(served.gateway.url, token=token) as client:
            with anyio.fail_after(WAIT):
                await client.call_tool("execute_code", {"code": f"tools.latch.echo(text={text!r})"})
    args = ("audit", "--config", str(served.config), "--principal", "carol", "--json")
    code, out, err = await cli(*args, env=environment(ENV))
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert sorted(record["kind"] for record in records) == ["execution", "tool_call"]
    assert all(record["principal"] == "carol" for record in records)
    assert CAROL not in out


async def test_a_role_gives_its_principal_less_reach_and_the_audit_names_it(served: Served) -> None:
    echo = {"code": "tools.latch.echo(text='hi')", "details": True}
    modes: tuple[ConnectMode, ...] = ("auto", "legacy")
    for mode in modes:
        async with (
            http_client(served.gateway.url, mode, token=ALICE) as alice,
            http_client(served.gateway.url, mode, token=BOB) as bob,
        ):
            with anyio.fail_after(WAIT):
                alice_docs = await alice.call_tool("search_docs", {"server": "latch"})
                bob_docs = await bob.call_tool("search_docs", {"server": "latch"})
                alice_echo = await alice.call_tool("execute_code", echo)
                bob_echo = await bob.call_tool("execute_code", echo)
        assert "latch.pid(" in str(alice_docs.content)
        assert "latch.pid(" not in str(bob_docs.content)
        assert "denied by policy" in str(bob_docs.content)  # echo is listed, marked
        assert alice_echo.structured_content is not None
        assert alice_echo.structured_content["ok"]
        assert bob_echo.structured_content is not None
        assert not bob_echo.structured_content["ok"]
        assert 'policy.roles[\\"contractor\\"].deny' in json.dumps(bob_echo.structured_content)
    args = ("audit", "--config", str(served.config), "--principal", "bob", "--json")
    code, out, err = await cli(*args, env=environment(ENV))
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert {record["kind"] for record in records} == {"execution", "tool_call"}
    for record in records:
        assert record["principal"] == "bob"
        assert record["roles"] == ["contractor"]
        assert record["client"]["name"], record


async def test_a_refused_token_is_a_warning_at_the_default_level_with_its_reason_and_never_the_token(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"mcpServers": {}, "auth": {"tokens": {"alice": "${ALICE_TOKEN}"}}})
    env = environment(ENV, drop=("CODEMODE_LOG_LEVEL",))
    wrong = secrets.token_urlsafe(32)
    async with http_gateway(config, env=env, log_level=None) as gateway, httpx2.AsyncClient() as http:
        with anyio.fail_after(WAIT):
            refused = await http.post(
                gateway.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Authorization": f"Bearer {wrong}"},
            )
            await gateway.logged("bearer token refused")
            scraped = await http.get(f"{gateway.base}/metrics")
    [record] = [record for record in gateway.logs if record.get("msg") == "bearer token refused"]
    everything = json.dumps(gateway.logs)
    assert refused.status_code == 401
    assert record["level"] == "warning"
    assert (record["reason"], record["verifier"], record["client"]) == ("unknown token", "auth", "127.0.0.1")
    assert wrong[:8] not in everything  # not the token, nor any part of it
    assert wrong[-8:] not in everything
    assert ALICE[:16] not in everything
    assert 'codemode_http_token_refusals_total{reason="unknown_token"} 1.0' in scraped.text
