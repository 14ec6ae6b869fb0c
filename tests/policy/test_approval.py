"""Per-call approval through MCP elicitation: what the user is shown and how each answer is read."""

from __future__ import annotations

import logging
from typing import Any, cast

import anyio
import pytest
from mcp import types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from gateway.policy._approval import APPROVAL_FORM, elicitation_approver, no_approver, pause_for_approval
from gateway.policy._prompt import approval_prompt

pytestmark = pytest.mark.anyio

ARGUMENTS = {"repo": "acme/site", "force": True, "paths": ["a.txt", "b.txt"]}


class FakeSession:
    """The two ServerSession methods the approver uses: a capability check and a form elicitation."""

    def __init__(self, answer: types.ElicitResult | MCPError, *, can_elicit: bool = True) -> None:
        self.answer = answer
        self.can_elicit = can_elicit
        self.asked: list[tuple[str, dict[str, Any], types.RequestId | None]] = []

    def check_client_capability(self, capability: types.ClientCapabilities) -> bool:
        return self.can_elicit and capability.elicitation is not None

    async def elicit_form(
        self,
        message: str,
        requested_schema: dict[str, Any],
        related_request_id: types.RequestId | None = None,
    ) -> types.ElicitResult:
        self.asked.append((message, requested_schema, related_request_id))
        if isinstance(self.answer, MCPError):
            raise self.answer
        return self.answer


def answer(action: str, content: dict[str, Any] | None = None) -> types.ElicitResult:
    return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]


async def ask(session: FakeSession, tool: str = "repo.delete", arguments: dict[str, Any] = ARGUMENTS) -> str:
    approve = elicitation_approver(cast(ServerSession, session), 17)
    with anyio.fail_after(5):
        return await approve(tool, arguments)


async def test_the_prompt_shows_the_tool_and_its_arguments_tied_to_the_request() -> None:
    session = FakeSession(answer("accept", {"approve": True}))
    await ask(session)
    [(message, schema, request_id)] = session.asked
    assert message == approval_prompt("repo.delete", ARGUMENTS)
    assert message.startswith("A code-mode snippet wants to call repo.delete with these arguments:\n")
    assert message.endswith("\nAllow this call?")
    assert schema == APPROVAL_FORM == {"type": "object", "properties": {}}  # Accept is the approval
    assert request_id == 17


async def test_long_arguments_are_cut_in_the_prompt_with_their_full_length() -> None:
    session = FakeSession(answer("decline"))
    await ask(session, arguments={"body": "é" * 5000})
    [(message, _, _)] = session.asked
    assert "é" * 200 in message
    assert "é" * 5000 not in message
    assert "(cut: 5,002 characters in all)" in message


async def test_without_an_approver_every_approval_is_unavailable() -> None:
    assert await no_approver("repo.delete", ARGUMENTS) == "unavailable"


async def test_a_client_that_cannot_elicit_is_unavailable_without_being_asked() -> None:
    session = FakeSession(answer("accept", {"approve": True}), can_elicit=False)
    assert await ask(session) == "unavailable"
    assert session.asked == []


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (answer("accept"), "approved"),
        (answer("accept", {}), "approved"),
        (answer("accept", {"approve": True}), "approved"),
        (answer("accept", {"approve": False}), "declined"),  # the form of earlier versions, unticked
        (answer("decline"), "declined"),
        (answer("decline", {"approve": True}), "declined"),
        (answer("cancel"), "declined"),
    ],
)
async def test_each_answer_maps_to_approved_or_declined(reply: types.ElicitResult, outcome: str) -> None:
    session = FakeSession(reply)
    assert await ask(session) == outcome
    assert len(session.asked) == 1


async def test_an_mcp_error_while_asking_is_unavailable_and_logged(
    policy_log: list[logging.LogRecord],
) -> None:
    session = FakeSession(MCPError(-32601, "Method not found"))
    assert await ask(session) == "unavailable"
    [record] = [r for r in policy_log if r.getMessage() == "approval request failed"]
    assert record.levelno == logging.WARNING
    assert (record.__dict__["tool"], record.__dict__["error"]) == ("repo.delete", "Method not found")


async def test_on_2026_07_28_every_call_that_needs_approval_pauses_the_run() -> None:
    with anyio.fail_after(5):
        assert await pause_for_approval("repo.delete", ARGUMENTS) == "pending"
