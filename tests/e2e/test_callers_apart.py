"""One caller never reaches another's, through the real gateway process over HTTP with the SDK's own
clients: static tokens beside JWTs from a loopback issuer, callers without `auth`, and the budgets
one caller could otherwise spend for everyone (kept background results, sessions).

Three tests share one gateway (a policy asking approval for `ledger.append`, room for two background
runs, eight sessions, an audit log): the one approving another caller's task, the one reading the
audit log (its own snippet's records), and the one opening sessions, which closes the sessions it
opened."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from tests.auth.issuer import AUDIENCE, Keys, LocalIssuer
from tests.e2e.gateway_http import HttpGateway, User, http_client, http_gateway
from tests.e2e.gateway_process import (
    WAIT,
    cli,
    environment,
    ledger_entries,
    text,
    write_config,
)
from tests.e2e.http_children import ledger_over_http
from tests.e2e.test_background import (
    ALICE,
    APPROVED,
    BOB,
    CancelTask,
    TaskId,
    TaskUpdate,
    UpdateTask,
    client_of,
    ended,
    get_task,
    start_task,
    started_id,
    task_until,
)
from tests.e2e.test_http import HANDSHAKE_HEADERS, INITIALIZE
from tests.real_servers import serve_asgi_app

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def gateway_with(
    tmp_path: Path, issuer: LocalIssuer | None, *, children: dict[str, Any] | None = None, **sections: Any
) -> AsyncIterator[HttpGateway]:
    """The gateway, over `children` (a test whose snippets call no tool needs none); with `issuer`,
    static tokens for alice and bob beside its JWTs."""
    config: dict[str, Any] = {
        "mcpServers": children or {},
        "audit": {"path": str(tmp_path / "audit.jsonl")},
        **sections,
    }
    if issuer is not None:
        oauth = {"issuer": issuer.url, "audience": AUDIENCE, "jwks_uri": issuer.jwks_uri}
        config["auth"] = {"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${BOB_TOKEN}"}, "oauth": oauth}
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    async with http_gateway(write_config(tmp_path, config), env=env) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def shared_issuer(issuer_keys: Keys) -> AsyncIterator[LocalIssuer]:
    """An OAuth issuer whose JWKS is served on 127.0.0.1 for the module's shared gateway."""
    local = LocalIssuer(issuer_keys)
    async with serve_asgi_app(local.app()) as (port, _):
        local.port = port
        yield local


@dataclass
class Shared:
    gateway: HttpGateway
    directory: Path


@pytest.fixture(scope="module")
async def shared(
    tmp_path_factory: pytest.TempPathFactory, shared_issuer: LocalIssuer
) -> AsyncIterator[Shared]:
    directory = tmp_path_factory.mktemp("callers")
    sections: dict[str, Any] = {
        "policy": {"approve": ["ledger.append"]},
        "background": {"max_running": 2},
        "http": {"max_sessions": 8},
    }
    async with (
        # Served from this process: no child process.
        ledger_over_http(directory, crm=crm_server) as children,
        gateway_with(directory, shared_issuer, children=children, **sections) as gateway,
    ):
        yield Shared(gateway, directory)


def crm_server() -> MCPServer:
    """A child whose `get_user` declares no output schema and answers a record whose field names are
    data (`carol_review`): only the caller whose call returned it may see them in a signature."""
    server = MCPServer("crm")

    @server.tool(structured_output=False)
    def get_user(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """A user's record."""
        return json.dumps({"salary": 100, f"{name}_review": "due"})

    return server


async def signatures_seen(client: Any) -> str:
    """What `client` reads of crm.get_user: search_docs, search() and help() inside a snippet."""
    searched = text(await client.call_tool("search_docs", {"query": "user record"}))
    snippet = "print(search('user record')[0].signature)\nhelp(tools.crm.get_user)"
    return searched + text(await client.call_tool("execute_code", {"code": snippet}))


async def test_a_jwt_whose_sub_is_a_static_tokens_name_cannot_approve_read_or_list_that_callers_task(
    shared: Shared, shared_issuer: LocalIssuer
) -> None:
    tmp_path, gateway = shared.directory, shared.gateway
    mallory = shared_issuer.mint(sub="alice", client_id="mallory-app")
    async with (
        client_of(gateway, tasks=True) as alice,
        client_of(gateway, tasks=True, token=mallory) as as_jwt,
        client_of(gateway, "legacy", token=mallory) as as_jwt_in_a_session,
    ):
        with anyio.fail_after(WAIT):
            handle = await start_task(alice, APPROVED)
            asking = await task_until(alice, handle.task_id, lambda s: s.status == "input_required")
            assert asking.input_requests is not None
            [key] = asking.input_requests
            accept = TaskUpdate(
                task_id=handle.task_id, input_responses={key: {"action": "accept", "content": {}}}
            )
            with pytest.raises(MCPError, match="another caller started it"):
                await as_jwt.session.send_request(UpdateTask(params=accept), types.EmptyResult)
            with pytest.raises(MCPError, match="another caller started it"):
                await get_task(as_jwt, handle.task_id)
            collected = await as_jwt.call_tool("execute_code", {"collect": handle.task_id})
            cancelled = await as_jwt.call_tool("execute_code", {"cancel": handle.task_id})
            cancel = CancelTask(params=TaskId(task_id=handle.task_id))
            with pytest.raises(MCPError, match="another caller started it"):
                await as_jwt.session.send_request(cancel, types.EmptyResult)
            listed = await as_jwt_in_a_session.session.send_request(
                types.ListTasksRequest(), types.ListTasksResult
            )
            still = await get_task(alice, handle.task_id)
            assert ledger_entries(tmp_path) == []  # the write was not made
            # The gateway still serves its caller: alice approves, and the write is made once.
            await alice.session.send_request(UpdateTask(params=accept), types.EmptyResult)
            done = await task_until(alice, handle.task_id, ended)
    assert collected.is_error
    assert "another caller started it" in text(collected)
    assert cancelled.is_error
    assert "another caller started it" in text(cancelled)
    assert listed.tasks == []
    assert still.status == "input_required"
    assert done.status == "completed"
    assert ledger_entries(tmp_path) == ["approved"]


async def test_the_field_names_of_one_callers_results_never_shape_another_callers_signatures(
    shared: Shared, shared_issuer: LocalIssuer
) -> None:
    mallory = shared_issuer.mint(sub="alice", client_id="mallory-app")  # alice's name, not alice
    async with (
        client_of(shared.gateway) as alice,
        client_of(shared.gateway, token=BOB) as bob,
        client_of(shared.gateway, token=mallory) as as_jwt,
    ):
        with anyio.fail_after(WAIT):
            called = await alice.call_tool("execute_code", {"code": "tools.crm.get_user(name='carol')"})
            alice_sees = await signatures_seen(alice)
            bob_sees, jwt_sees = await signatures_seen(bob), await signatures_seen(as_jwt)
            # The gateway still serves bob, and his own call teaches him the shape of his own result.
            await bob.call_tool("execute_code", {"code": "tools.crm.get_user(name='dan')"})
            bob_after = await signatures_seen(bob)
    assert not called.is_error, text(called)
    assert "-> {'salary': int, 'carol_review': str}  # (observed)" in alice_sees
    for seen in (bob_sees, jwt_sees):
        assert "crm.get_user(*, name: str) -> Any" in seen
        assert "carol" not in seen
        assert "salary" not in seen
    assert "-> {'salary': int, 'dan_review': str}  # (observed)" in bob_after
    assert "carol" not in bob_after


async def test_the_audit_log_tells_a_jwt_caller_from_the_static_token_of_the_same_name(
    shared: Shared, shared_issuer: LocalIssuer
) -> None:
    mallory = shared_issuer.mint(sub="alice", client_id="mallory-app")
    code = "'told apart in the audit log'"  # this test's own snippet: other tests call as alice too
    for token in (ALICE, mallory):
        async with http_client(shared.gateway.url, token=token) as client:
            with anyio.fail_after(WAIT):
                await client.call_tool("execute_code", {"code": code})
    env = environment({"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB})
    config = str(shared.directory / "team.json")
    mixed = await cli("audit", "--config", config, "--principal", "alice", "--json", env=env)
    static = await cli(
        "audit",
        "--config",
        config,
        "--principal",
        "alice",
        "--issuer",
        "codemode-gateway:tokens",
        "--json",
        env=env,
    )
    assert mixed[0] != 0
    assert "pass --issuer" in mixed[2]
    assert shared_issuer.url in mixed[2]
    assert static[0] == 0, static[2]
    records = [json.loads(line) for line in static[1].splitlines()]
    digest = hashlib.sha256(code.encode()).hexdigest()
    ours = [r for r in records if r.get("script_sha256") == digest]
    assert len(ours) == 1, ours  # the static token's run, not the JWT caller's of the same name
    assert all(r["issuer"] == "codemode-gateway:tokens" for r in records)
    assert not [r for r in records if "oauth_client" in r]


async def test_without_auth_a_listing_never_names_another_clients_background_run(tmp_path: Path) -> None:
    async with gateway_with(tmp_path, None) as gateway:
        async with http_client(gateway.url) as victim:
            with anyio.fail_after(WAIT):
                started = await victim.call_tool(
                    "execute_code", {"code": "'victim private result'", "background": True}
                )
        victims = started_id(started)
        async with http_client(gateway.url, "legacy") as other:
            with anyio.fail_after(WAIT):
                listed = await other.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
                assert victims not in [task.task_id for task in listed.tasks]
                mine = await other.call_tool("execute_code", {"code": "'mine'", "background": True})
                own = started_id(mine)
                listed_after = await other.session.send_request(
                    types.ListTasksRequest(), types.ListTasksResult
                )
                # The id itself stays the capability: whoever holds it collects (a reconnecting client).
                held = await other.call_tool("execute_code", {"collect": victims}, read_timeout_seconds=WAIT)
    assert [task.task_id for task in listed_after.tasks] == [own]
    assert not held.is_error, text(held)
    assert text(held) == "'victim private result'"


async def test_one_callers_background_runs_never_push_out_another_callers_result(
    tmp_path: Path, issuer: LocalIssuer
) -> None:
    background = {"max_kept": 3, "max_running": 1, "max_running_per_caller": 1}
    async with (
        gateway_with(tmp_path, issuer, background=background) as gateway,
        client_of(gateway) as alice,
        client_of(gateway, token=BOB) as bob,
    ):
        with anyio.fail_after(WAIT):
            started = await alice.call_tool("execute_code", {"code": "'alice result'", "background": True})
            alices = started_id(started)
            await alice.call_tool("execute_code", {"collect": alices}, read_timeout_seconds=WAIT)
            for n in range(4):
                run = await bob.call_tool("execute_code", {"code": f"'bob {n}'", "background": True})
                bobs = started_id(run)
                await bob.call_tool("execute_code", {"collect": bobs}, read_timeout_seconds=WAIT)
            collected = await alice.call_tool("execute_code", {"collect": alices}, read_timeout_seconds=WAIT)
    assert not collected.is_error, text(collected)
    assert text(collected) == "'alice result'"


SHARE = 256 * 1024  # background.max_kept_bytes_per_caller, small so that a few shown blobs pass it
SHOW_64_KIB = "import os\nshow(Blob(os.urandom(64 * 2**10 - 64), mime_type='image/png'))\n'shown'"


async def test_what_finished_runs_showed_is_kept_within_the_callers_byte_share(
    tmp_path: Path, issuer: LocalIssuer
) -> None:
    background = {"max_running": 1, "max_running_per_caller": 1, "max_kept_bytes_per_caller": SHARE}
    ids: list[str] = []
    async with gateway_with(tmp_path, issuer, background=background) as gateway, client_of(gateway) as alice:
        with anyio.fail_after(WAIT * 3):
            for _ in range(4):  # 4 x 87 KB of base64: past the caller's share of 256 KiB
                run = await alice.call_tool("execute_code", {"code": SHOW_64_KIB, "background": True})
                ids.append(started_id(run))
                done = await alice.call_tool("execute_code", {"collect": ids[-1]}, read_timeout_seconds=WAIT)
                assert not done.is_error, text(done)
            oldest = await alice.call_tool("execute_code", {"collect": ids[0]})
            newest = await alice.call_tool("execute_code", {"collect": ids[-1]}, read_timeout_seconds=WAIT)
    assert oldest.is_error
    assert "the id is unknown" in text(oldest)
    assert [block.type for block in newest.content] == ["text", "image"]


async def test_one_caller_cannot_take_every_session_and_another_still_opens_one(
    shared: Shared, shared_issuer: LocalIssuer
) -> None:
    gateway = shared.gateway
    async with httpx2.AsyncClient(timeout=WAIT) as http:

        async def initialize(token: str) -> httpx2.Response:
            headers = HANDSHAKE_HEADERS | {"authorization": f"Bearer {token}"}
            return await http.post(gateway.url, json=INITIALIZE, headers=headers)

        async def close(token: str, opened: httpx2.Response) -> httpx2.Response:
            headers = {"authorization": f"Bearer {token}", "mcp-session-id": opened.headers["mcp-session-id"]}
            return await http.delete(gateway.url, headers=headers)

        bobs: list[httpx2.Response] = []

        async def bob_opens() -> None:
            bobs.append(await initialize(BOB))

        jwt_alice = shared_issuer.mint(sub="alice")
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as at_once:  # all at once: none slips past the share
                for _ in range(8):
                    at_once.start_soon(bob_opens)
            alices = await initialize(ALICE)
            jwt_alices = await initialize(jwt_alice)
            opened = [r for r in bobs if r.status_code == 200]
            closed = await close(BOB, opened[0])
            reopened = await initialize(BOB)
        async with http_client(gateway.url, "legacy", token=ALICE) as client:
            with anyio.fail_after(WAIT):
                served = await client.call_tool("execute_code", {"code": "'still serving'"})
        with anyio.fail_after(WAIT):  # the sessions it opened are closed: the gateway serves other tests
            left_open = [(BOB, opened[-1]), (BOB, reopened), (ALICE, alices), (jwt_alice, jwt_alices)]
            for token, response in left_open:
                if response.status_code == 200:
                    await close(token, response)
    assert len(opened) == 2, [r.status_code for r in bobs]  # a quarter of max_sessions
    refusals = [r for r in bobs if r.status_code != 200]
    assert [r.status_code for r in refusals] == [429] * 6
    refused = refusals[0]
    assert refused.json()["error"]["data"] == {"key": "http.max_sessions_per_caller", "value": 2}
    assert "this caller has 2 sessions open" in refused.json()["error"]["message"]
    assert alices.status_code == 200
    assert jwt_alices.status_code == 200
    assert closed.status_code == 200
    assert reopened.status_code == 200
    assert not served.is_error, text(served)


async def test_another_caller_cannot_resume_a_callers_paused_approval_and_the_owner_still_can(
    shared: Shared, shared_issuer: LocalIssuer
) -> None:
    entry = f"resumed by its owner {secrets.token_hex(4)}"
    code = f"tools.ledger.append(entry={entry!r})\n'appended'"
    approve: types.InputResponses = {"approval": types.ElicitResult(action="accept", content={})}
    mallory = shared_issuer.mint(sub="alice", client_id="mallory-app")
    url, user = shared.gateway.url, User()  # clients that can ask their user get approvals in rounds
    async with (
        http_client(url, token=ALICE, elicitation=user) as alice,
        http_client(url, token=BOB, elicitation=user) as bob,
        http_client(url, token=mallory, elicitation=user) as as_jwt,
    ):
        with anyio.fail_after(WAIT):
            paused = await alice.session.call_tool("execute_code", {"code": code}, allow_input_required=True)
            assert isinstance(paused, types.InputRequiredResult), paused
            for other in (bob, as_jwt):  # another principal, and a JWT whose `sub` is her token's name
                with pytest.raises(MCPError, match="Invalid or expired requestState"):
                    await other.session.call_tool(
                        "execute_code",
                        {"code": code},
                        input_responses=approve,
                        request_state=paused.request_state,
                        allow_input_required=True,
                    )
            written_before = ledger_entries(shared.directory).count(entry)
            # Their attempts did not spend her state: she approves, and the write is made once.
            done = await alice.session.call_tool(
                "execute_code",
                {"code": code},
                input_responses=approve,
                request_state=paused.request_state,
                allow_input_required=True,
            )
    assert written_before == 0
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert ledger_entries(shared.directory).count(entry) == 1


async def test_another_caller_can_neither_use_nor_end_a_callers_session(shared: Shared) -> None:
    url = shared.gateway.url
    list_tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    as_alice, as_bob = ({"authorization": f"Bearer {token}"} for token in (ALICE, BOB))
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            opened = await http.post(url, json=INITIALIZE, headers=HANDSHAKE_HEADERS | as_alice)
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            await http.post(url, json=initialized, headers=HANDSHAKE_HEADERS | as_alice | session)
            used_by_bob = await http.post(url, json=list_tools, headers=HANDSHAKE_HEADERS | as_bob | session)
            ended_by_bob = await http.delete(url, headers=as_bob | session)
            used_by_alice = await http.post(
                url, json=list_tools, headers=HANDSHAKE_HEADERS | as_alice | session
            )
            ended_by_alice = await http.delete(url, headers=as_alice | session)
    # To bob the session does not exist: the answer an unknown id gets.
    assert (used_by_bob.status_code, ended_by_bob.status_code) == (404, 404)
    assert "execute_code" not in used_by_bob.text
    assert used_by_alice.status_code == 200
    assert "execute_code" in used_by_alice.text
    assert ended_by_alice.status_code == 200


FLOOD_UNKNOWN_CALLS = """
name = '.'.join(['nope', 'missing'])
for _ in range(40):
    try:
        call_tool(name, text='x' * 100)
    except ToolError:
        pass
'flooded'
"""


async def test_a_jwt_whose_sub_is_a_static_tokens_name_cannot_spend_that_callers_audit_budget(
    tmp_path: Path, issuer: LocalIssuer
) -> None:
    audit = {"path": str(tmp_path / "audit.jsonl"), "principal_budget_bytes": 8_192}
    mallory = issuer.mint(sub="alice", client_id="mallory-app")
    code = "'alice after the flood'"
    async with gateway_with(tmp_path, issuer, audit=audit) as gateway:
        async with http_client(gateway.url, token=mallory) as as_jwt:
            with anyio.fail_after(WAIT):
                flood = await as_jwt.call_tool("execute_code", {"code": FLOOD_UNKNOWN_CALLS})
                await gateway.logged(
                    "a caller passed the audit budget: its records are counted, not written, until "
                    "the window ends (audit.principal_budget_bytes)"
                )
        async with http_client(gateway.url, token=ALICE) as alice:
            with anyio.fail_after(WAIT):
                after = await alice.call_tool("execute_code", {"code": code})
        assert await gateway.stop() == 0
    assert text(flood).startswith("'flooded'")
    assert text(after) == "'alice after the flood'"
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text("ascii").splitlines()]
    digest = hashlib.sha256(code.encode()).hexdigest()
    alices = [r for r in records if r.get("script_sha256") == digest]
    assert [(r["principal"], r["issuer"]) for r in alices] == [("alice", "codemode-gateway:tokens")]
    [summary] = [r for r in records if r["kind"] == "suppressed"]
    assert (summary["principal"], summary.get("issuer")) == ("alice", issuer.url)
