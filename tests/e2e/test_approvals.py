"""Approvals of calls made inside execute_code, end to end on both protocol eras.

The real gateway process, a real child with countable side effects (each `ledger.append` adds a line
to a file), and the SDK's own `Client`: `mode="auto"` negotiates 2026-07-28, where the run pauses
and the client retries with the user's answer (input-required rounds); `mode="legacy"` the
handshake era, where the gateway asks inline.

One gateway per era serves the module's tests that need no config of their own (they share one
ledger and one audit log): each test tags its ledger entries and its snippets with a token of its own
and reads only the entries and the audit records that carry it. A second gateway per era, over the
same config, is of a client that cannot be asked (no elicitation); the 2026-07-28 one has another
approval key, so it also serves the test of a state sent to a gateway that did not seal it.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.shared.exceptions import MCPError

from tests.e2e.gateway_process import (
    WAIT,
    environment,
    ledger_entries,
    ledger_server,
    sdk_client,
    text,
    write_config,
)

pytestmark = pytest.mark.anyio

ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])
KEY_VAR = "CODEMODE_TEST_APPROVALS_KEY"

# A side effect needing no approval, and a random token drawn, before the first approval: a replayed
# round must neither repeat the one nor draw another token.
TWO_APPROVED_APPENDS = """
import random
token = f"{random.getrandbits(64):016x}"
tools.ledger.note(entry=f"noted {token}")
first = tools.ledger.append(entry=f"first {token}")
second = tools.ledger.append(entry=f"second {token}")
print("appended", first, second)
token
"""


def ledger_config(directory: Path, **sections: Any) -> Path:
    return write_config(
        directory,
        {
            "mcpServers": {"ledger": ledger_server(directory)},
            "policy": {"approve": ["ledger.append"]},
            "audit": {"path": str(directory / "audit.jsonl")},
            **sections,
        },
    )


class User:
    """The person at the client: gives the same answer to every approval and remembers each prompt."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


class Shared:
    """The module's gateway: its directory (ledger, audit log, config), its approval key, and the
    user at each era's client, whom each test gives its own answer."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.env = environment({KEY_VAR: secrets.token_hex(32)})
        # The limits two tests probe, set where they harm no other test: two approvals per run at
        # most, and a state of at most 4 KiB (the other tests' states carry a few small results).
        self.config = ledger_config(
            directory, approvals={"key": "${" + KEY_VAR + "}", "max_rounds": 2, "max_state_bytes": 4096}
        )
        self.user = User()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    return Shared(tmp_path_factory.mktemp("approvals"))


@pytest.fixture(scope="module")
async def auto_client(shared: Shared) -> AsyncIterator[Client]:
    async with sdk_client(shared.config, "auto", env=shared.env, elicitation=shared.user) as client:
        yield client


@pytest.fixture(scope="module")
async def legacy_client(shared: Shared) -> AsyncIterator[Client]:
    async with sdk_client(shared.config, "legacy", env=shared.env, elicitation=shared.user) as client:
        yield client


@pytest.fixture(scope="module")
async def headless_auto(shared: Shared) -> AsyncIterator[Client]:
    """A client that cannot be asked, on a gateway whose approval key is not the module's."""
    other = environment({KEY_VAR: secrets.token_hex(32)})
    async with sdk_client(shared.config, "auto", env=other) as client:
        yield client


@pytest.fixture(scope="module")
async def headless_legacy(shared: Shared) -> AsyncIterator[Client]:
    """A client that cannot be asked, on the handshake era."""
    async with sdk_client(shared.config, "legacy", env=shared.env) as client:
        yield client


@pytest.fixture
def headless_eras(headless_auto: Client, headless_legacy: Client) -> dict[str, Client]:
    """The headless client of each era, by its mode."""
    return {"auto": headless_auto, "legacy": headless_legacy}


@pytest.fixture
def user(shared: Shared) -> User:
    """The user at the shared clients, accepting with no form content until the test says otherwise."""
    shared.user.action, shared.user.content, shared.user.prompts = "accept", None, []
    return shared.user


@pytest.fixture
def tag() -> str:
    """This test's own token: its ledger entries and snippets carry it."""
    return secrets.token_hex(6)


@pytest.fixture
def eras(auto_client: Client, legacy_client: Client) -> dict[str, Client]:
    """The shared client of each era, by its mode."""
    return {"auto": auto_client, "legacy": legacy_client}


def entries(directory: Path, tag: str) -> list[str]:
    """What reached the ledger from this test's snippets (entries carrying `tag`), oldest first."""
    return [entry.removeprefix(f"{tag} ") for entry in ledger_entries(directory) if tag in entry]


def audit(directory: Path, *codes: str) -> list[dict[str, Any]]:
    """The audit records of the executions of `codes` (each test's snippets are its own), in order."""
    lines = (directory / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    digests = {hashlib.sha256(code.encode()).hexdigest() for code in codes}
    ids = {r["execution_id"] for r in records if r["kind"] == "execution" and r["script_sha256"] in digests}
    return [r for r in records if r.get("execution_id") in ids]


async def execute(client: Client, code: str) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool("execute_code", {"code": code, "details": True})


@ERAS
async def test_each_approved_call_reaches_the_child_exactly_once(
    eras: dict[str, Client], shared: Shared, user: User, tag: str, mode: ConnectMode
) -> None:
    user.content = {}  # Accept with an empty form approves
    client = eras[mode]
    code = f"# {tag}\n{TWO_APPROVED_APPENDS}"
    era = client.session.protocol_version
    result = await execute(client, code)
    assert era == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    token = result.structured_content["value"]
    assert entries(shared.directory, token) == [f"noted {token}", f"first {token}", f"second {token}"]
    # Each append's own count of the (shared) ledger: the second right after the first.
    stdout = result.structured_content["stdout"]
    counts = re.fullmatch(r"appended \{'result': (\d+)\} \{'result': (\d+)\}\n", stdout)
    assert counts is not None, stdout
    assert int(counts[2]) == int(counts[1]) + 1
    assert len(user.prompts) == 2
    assert "ledger.append" in user.prompts[0]
    assert f'entry: "first {token}"' in user.prompts[0]
    assert f'entry: "second {token}"' in user.prompts[1]
    # The audit log has each call once, approved; on 2026-07-28 the rounds that paused say so.
    records = audit(shared.directory, code)
    calls = [r for r in records if r["kind"] == "tool_call" and r["ok"]]
    assert [(r["tool"], r["approval"]) for r in calls] == [
        ("ledger.note", "not_required"),
        ("ledger.append", "approved"),
        ("ledger.append", "approved"),
    ]
    executions = [r for r in records if r["kind"] == "execution"]
    assert len({r["execution_id"] for r in executions}) == 1
    if mode == "auto":
        assert [r.get("round", 1) for r in executions] == [1, 2, 3]
        assert [r["error_category"] for r in executions] == ["pending", "pending", None]
    else:
        assert len(executions) == 1


@ERAS
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_refused_call_is_a_catchable_tool_error_and_the_run_goes_on(
    eras: dict[str, Client], shared: Shared, user: User, tag: str, mode: ConnectMode, action: str
) -> None:
    user.action = action
    code = (
        f"try:\n    tools.ledger.append(entry='{tag} never')\n"
        "except ToolError as e:\n    print('refused:', e)\n"
        f"[e for e in tools.ledger.entries()['result'] if e.startswith('{tag}')]"
    )
    result = await execute(eras[mode], code)
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    assert "the user declined" in result.structured_content["stdout"]
    assert result.structured_content["value"] == []
    assert entries(shared.directory, tag) == []
    assert len(user.prompts) == 1


@ERAS
async def test_a_client_that_cannot_ask_gets_a_refusal_that_says_what_to_do(
    headless_eras: dict[str, Client], shared: Shared, tag: str, mode: ConnectMode
) -> None:
    code = f"tools.ledger.append(entry='{tag} unasked')"
    result = await execute(headless_eras[mode], code)
    assert result.is_error
    message = text(result)
    assert "cannot ask the user" in message
    assert "interactive client" in message
    assert "policy" in message
    assert entries(shared.directory, tag) == []
    [call] = [r for r in audit(shared.directory, code) if r["kind"] == "tool_call"]
    assert call["approval"] == "unavailable"


async def first_round(client: Client, code: str) -> types.InputRequiredResult:
    with anyio.fail_after(WAIT):
        paused = await client.session.call_tool(
            "execute_code", {"code": code, "details": True}, allow_input_required=True
        )
    assert isinstance(paused, types.InputRequiredResult), paused
    return paused


async def retry(
    client: Client, code: str, state: str | None, answer: types.ElicitResult
) -> types.CallToolResult | types.InputRequiredResult:
    with anyio.fail_after(WAIT):
        return await client.session.call_tool(
            "execute_code",
            {"code": code, "details": True},
            input_responses={"approval": answer},
            request_state=state,
            allow_input_required=True,
        )


APPROVE = types.ElicitResult(action="accept", content={})


def one_append(tag: str) -> str:
    return f"tools.ledger.append(entry='{tag} once')"


async def test_the_paused_round_shows_the_exact_call_and_carries_an_opaque_state(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    paused = await first_round(auto_client, one_append(tag))
    assert paused.input_requests is not None
    [(key, request)] = paused.input_requests.items()
    assert key == "approval"
    assert isinstance(request, types.ElicitRequest)
    assert isinstance(request.params, types.ElicitRequestFormParams)
    assert request.params.message.startswith("A code-mode snippet wants to call ledger.append")
    assert f'entry: "{tag} once"' in request.params.message
    assert paused.request_state is not None
    assert "once" not in paused.request_state  # sealed: the client cannot read what it carries
    assert tag not in paused.request_state
    assert entries(shared.directory, tag) == []


async def test_a_state_resumes_once_and_a_replay_is_refused(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    code = one_append(tag)
    paused = await first_round(auto_client, code)
    done = await retry(auto_client, code, paused.request_state, APPROVE)
    replayed = await retry(auto_client, code, paused.request_state, APPROVE)
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert isinstance(replayed, types.CallToolResult)
    assert replayed.is_error
    assert "already used" in text(replayed)
    assert entries(shared.directory, tag) == ["once"]


def flipped(state: str, at: int) -> str:
    return state[:at] + ("A" if state[at] != "A" else "B") + state[at + 1 :]


@pytest.mark.parametrize("tamper", ["flip", "truncate", "swap"])
async def test_an_altered_state_is_refused_and_never_resumed(
    auto_client: Client, shared: Shared, user: User, tag: str, tamper: str
) -> None:
    code = one_append(tag)
    paused = await first_round(auto_client, code)
    state = paused.request_state
    assert state is not None
    altered = {
        "flip": flipped(state, len(state) // 2),
        "truncate": state[:-8],
        # A genuine state, but minted for another snippet.
        "swap": (await first_round(auto_client, code + "  # other")).request_state,
    }[tamper]
    with pytest.raises(MCPError, match="Invalid or expired requestState"):
        await retry(auto_client, code, altered, APPROVE)
    # and the gateway keeps serving
    result = await execute(
        auto_client, f"[e for e in tools.ledger.entries()['result'] if e.startswith('{tag}')]"
    )
    assert result.structured_content is not None
    assert result.structured_content["value"] == []
    assert entries(shared.directory, tag) == []


async def test_an_expired_state_is_refused(tmp_path: Path) -> None:
    config = ledger_config(tmp_path, approvals={"ttl_seconds": 0.2})
    async with sdk_client(config, elicitation=User()) as client:
        paused = await first_round(client, one_append("expiring"))
        await anyio.sleep(0.3)  # past the ttl, counted from before the state reached this client
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await retry(client, one_append("expiring"), paused.request_state, APPROVE)
    assert ledger_entries(tmp_path) == []


async def test_a_run_paused_in_one_gateway_resumes_in_another_sharing_the_key(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    code = f"# {tag}\n{TWO_APPROVED_APPENDS}"
    before = len(ledger_entries(shared.directory))
    async with sdk_client(shared.config, env=shared.env, elicitation=User()) as first:
        paused = await first_round(first, code)
    # The first gateway is gone; its run lives on in the state, which the module's gateway resumes.
    [noted] = ledger_entries(shared.directory)[before:]
    again = await retry(auto_client, code, paused.request_state, APPROVE)
    assert isinstance(again, types.InputRequiredResult)  # the second approval
    done = await retry(auto_client, code, again.request_state, APPROVE)
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert done.structured_content is not None
    token = done.structured_content["value"]
    assert entries(shared.directory, token) == [noted, f"first {token}", f"second {token}"]
    assert noted == f"noted {token}"


async def test_a_gateway_with_another_key_refuses_the_state(
    auto_client: Client, headless_auto: Client, shared: Shared, user: User, tag: str
) -> None:
    paused = await first_round(auto_client, one_append(tag))
    # The retry carries the user's answer itself: the other gateway need not ask anyone.
    with pytest.raises(MCPError, match="Invalid or expired requestState"):
        await retry(headless_auto, one_append(tag), paused.request_state, APPROVE)
    assert entries(shared.directory, tag) == []


async def test_more_approvals_than_max_rounds_end_the_run_saying_which_key_to_change(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    code = f"for i in range(3):\n    tools.ledger.append(entry=f'{tag} {{i}}')"
    result = await execute(auto_client, code)
    assert result.is_error
    assert "approvals.max_rounds" in text(result)
    assert entries(shared.directory, tag) == ["0", "1"]


async def test_a_state_too_large_to_carry_ends_the_run_saying_what_to_do(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    # An incompressible result before the approval: more than the state may carry.
    code = (
        "import random\n"
        f"tools.ledger.note(entry='{tag} ' + random.randbytes(4000).hex())\n"
        "everything = tools.ledger.entries()\n"
        f"tools.ledger.append(entry='{tag} after')\n"
    )
    result = await execute(auto_client, code)
    assert result.is_error
    message = text(result)
    assert "ledger.append needs approval, but what the run received before it (tool results" in message
    assert "approvals.max_state_bytes of 4,096" in message
    assert user.prompts == []  # never asked about a call the run could not resume
    [noted] = entries(shared.directory, tag)
    assert len(noted) == 8000
