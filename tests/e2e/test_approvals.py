"""Approvals of calls made inside execute_code, end to end on both protocol eras.

The real gateway process, a real child with countable side effects (each `ledger.append` adds a line
to a file), and the SDK's own `Client`: `mode="auto"` negotiates 2026-07-28, where the run pauses
and the client retries with the user's answer (input-required rounds); `mode="legacy"` the
handshake era, where the gateway asks inline.
"""

from __future__ import annotations

import json
import secrets
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


def ledger_config(tmp_path: Path, **sections: Any) -> Path:
    return write_config(
        tmp_path,
        {
            "mcpServers": {"ledger": ledger_server(tmp_path)},
            "policy": {"approve": ["ledger.append"]},
            "audit": {"path": str(tmp_path / "audit.jsonl")},
            **sections,
        },
    )


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


class User:
    """The person at the client: gives the same answer to every approval and remembers each prompt."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


async def execute(client: Client, code: str) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool("execute_code", {"code": code, "details": True})


@ERAS
async def test_each_approved_call_reaches_the_child_exactly_once(tmp_path: Path, mode: ConnectMode) -> None:
    user = User("accept", {})  # Accept with an empty form approves
    async with sdk_client(ledger_config(tmp_path), mode, elicitation=user) as client:
        era = client.session.protocol_version
        result = await execute(client, TWO_APPROVED_APPENDS)
    assert era == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    token = result.structured_content["value"]
    assert ledger_entries(tmp_path) == [f"noted {token}", f"first {token}", f"second {token}"]
    assert result.structured_content["stdout"] == "appended {'result': 2} {'result': 3}\n"
    assert len(user.prompts) == 2
    assert "ledger.append" in user.prompts[0]
    assert f'entry: "first {token}"' in user.prompts[0]
    assert f'entry: "second {token}"' in user.prompts[1]
    # The audit log has each call once, approved; on 2026-07-28 the rounds that paused say so.
    calls = [r for r in audit(tmp_path) if r["kind"] == "tool_call" and r["ok"]]
    assert [(r["tool"], r["approval"]) for r in calls] == [
        ("ledger.note", "not_required"),
        ("ledger.append", "approved"),
        ("ledger.append", "approved"),
    ]
    executions = [r for r in audit(tmp_path) if r["kind"] == "execution"]
    assert len({r["execution_id"] for r in executions}) == 1
    if mode == "auto":
        assert [r.get("round", 1) for r in executions] == [1, 2, 3]
        assert [r["error_category"] for r in executions] == ["pending", "pending", None]


@ERAS
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_refused_call_is_a_catchable_tool_error_and_the_run_goes_on(
    tmp_path: Path, mode: ConnectMode, action: str
) -> None:
    code = (
        "try:\n    tools.ledger.append(entry='never')\nexcept ToolError as e:\n    print('refused:', e)\n"
        "tools.ledger.entries()"
    )
    async with sdk_client(ledger_config(tmp_path), mode, elicitation=User(action)) as client:
        result = await execute(client, code)
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    assert "the user declined" in result.structured_content["stdout"]
    assert result.structured_content["value"] == {"result": []}
    assert ledger_entries(tmp_path) == []


@ERAS
async def test_a_client_that_cannot_ask_gets_a_refusal_that_says_what_to_do(
    tmp_path: Path, mode: ConnectMode
) -> None:
    async with sdk_client(ledger_config(tmp_path), mode) as client:  # no elicitation: headless
        result = await execute(client, "tools.ledger.append(entry='unasked')")
    assert result.is_error
    message = text(result)
    assert "cannot ask the user" in message
    assert "interactive client" in message
    assert "policy" in message
    assert ledger_entries(tmp_path) == []
    [call] = [r for r in audit(tmp_path) if r["kind"] == "tool_call"]
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
ONE_APPEND = "tools.ledger.append(entry='once')"


async def test_the_paused_round_shows_the_exact_call_and_carries_an_opaque_state(tmp_path: Path) -> None:
    async with sdk_client(ledger_config(tmp_path), elicitation=User()) as client:
        paused = await first_round(client, ONE_APPEND)
    assert paused.input_requests is not None
    [(key, request)] = paused.input_requests.items()
    assert key == "approval"
    assert isinstance(request, types.ElicitRequest)
    assert isinstance(request.params, types.ElicitRequestFormParams)
    assert request.params.message.startswith("A code-mode snippet wants to call ledger.append")
    assert 'entry: "once"' in request.params.message
    assert paused.request_state is not None
    assert "once" not in paused.request_state  # sealed: the client cannot read what it carries
    assert ledger_entries(tmp_path) == []


async def test_a_state_resumes_once_and_a_replay_is_refused(tmp_path: Path) -> None:
    async with sdk_client(ledger_config(tmp_path), elicitation=User()) as client:
        paused = await first_round(client, ONE_APPEND)
        done = await retry(client, ONE_APPEND, paused.request_state, APPROVE)
        replayed = await retry(client, ONE_APPEND, paused.request_state, APPROVE)
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert isinstance(replayed, types.CallToolResult)
    assert replayed.is_error
    assert "already used" in text(replayed)
    assert ledger_entries(tmp_path) == ["once"]


def flipped(state: str, at: int) -> str:
    return state[:at] + ("A" if state[at] != "A" else "B") + state[at + 1 :]


@pytest.mark.parametrize("tamper", ["flip", "truncate", "swap"])
async def test_an_altered_state_is_refused_and_never_resumed(tmp_path: Path, tamper: str) -> None:
    async with sdk_client(ledger_config(tmp_path), elicitation=User()) as client:
        paused = await first_round(client, ONE_APPEND)
        state = paused.request_state
        assert state is not None
        altered = {
            "flip": flipped(state, len(state) // 2),
            "truncate": state[:-8],
            # A genuine state, but minted for another snippet.
            "swap": (await first_round(client, ONE_APPEND + "  # other")).request_state,
        }[tamper]
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await retry(client, ONE_APPEND, altered, APPROVE)
        result = await execute(client, "tools.ledger.entries()")  # and the gateway keeps serving
    assert result.structured_content is not None
    assert result.structured_content["value"] == {"result": []}
    assert ledger_entries(tmp_path) == []


async def test_an_expired_state_is_refused(tmp_path: Path) -> None:
    config = ledger_config(tmp_path, approvals={"ttl_seconds": 1})
    async with sdk_client(config, elicitation=User()) as client:
        paused = await first_round(client, ONE_APPEND)
        await anyio.sleep(1.5)
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await retry(client, ONE_APPEND, paused.request_state, APPROVE)
    assert ledger_entries(tmp_path) == []


async def test_a_run_paused_in_one_gateway_resumes_in_another_sharing_the_key(tmp_path: Path) -> None:
    env = environment({KEY_VAR: secrets.token_hex(32)})
    config = ledger_config(tmp_path, approvals={"key": "${" + KEY_VAR + "}"})
    code = TWO_APPROVED_APPENDS
    async with sdk_client(config, env=env, elicitation=User()) as first:
        paused = await first_round(first, code)
    [noted] = ledger_entries(tmp_path)  # the first gateway is gone; its run lives on in the state
    async with sdk_client(config, env=env, elicitation=User()) as second:
        again = await retry(second, code, paused.request_state, APPROVE)
        assert isinstance(again, types.InputRequiredResult)  # the second approval
        done = await retry(second, code, again.request_state, APPROVE)
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert done.structured_content is not None
    token = done.structured_content["value"]
    assert ledger_entries(tmp_path) == [noted, f"first {token}", f"second {token}"]
    assert noted == f"noted {token}"


async def test_a_gateway_with_another_key_refuses_the_state(tmp_path: Path) -> None:
    config = ledger_config(tmp_path, approvals={"key": "${" + KEY_VAR + "}"})
    env = environment({KEY_VAR: secrets.token_hex(32)})
    async with sdk_client(config, env=env, elicitation=User()) as first:
        paused = await first_round(first, ONE_APPEND)
    other = environment({KEY_VAR: secrets.token_hex(32)})
    async with sdk_client(config, env=other, elicitation=User()) as second:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await retry(second, ONE_APPEND, paused.request_state, APPROVE)
    assert ledger_entries(tmp_path) == []


async def test_more_approvals_than_max_rounds_end_the_run_saying_which_key_to_change(tmp_path: Path) -> None:
    code = "for i in range(3):\n    tools.ledger.append(entry=str(i))"
    config = ledger_config(tmp_path, approvals={"max_rounds": 2})
    async with sdk_client(config, elicitation=User()) as client:
        result = await execute(client, code)
    assert result.is_error
    assert "approvals.max_rounds" in text(result)
    assert ledger_entries(tmp_path) == ["0", "1"]


async def test_a_state_too_large_to_carry_ends_the_run_saying_what_to_do(tmp_path: Path) -> None:
    # An incompressible result before the approval: more than the state may carry.
    code = (
        "import random\n"
        "tools.ledger.note(entry=random.randbytes(4000).hex())\n"
        "everything = tools.ledger.entries()\n"
        "tools.ledger.append(entry='after')\n"
    )
    user = User()
    config = ledger_config(tmp_path, approvals={"max_state_bytes": 4096})
    async with sdk_client(config, elicitation=user) as client:
        result = await execute(client, code)
    assert result.is_error
    message = text(result)
    assert "ledger.append needs approval, but what the run received before it (tool results" in message
    assert "approvals.max_state_bytes of 4,096" in message
    assert user.prompts == []  # never asked about a call the run could not resume
    [noted] = ledger_entries(tmp_path)
    assert len(noted) == 8000
