"""Per-call approval: the user approves each call of a tool the policy marks, through MCP elicitation.

Approving `execute_code` approves nothing inside it: every marked call asks again, showing the
exact tool and arguments. A client that cannot elicit gets a refusal, never a silent call.

How the user is asked depends on the protocol era. A handshake-era session (2025-11-25 and older)
sends `elicitation/create` while the call waits (`elicitation_approver`). On 2026-07-28 a server
may not ask on its own: the run pauses at the call ("pending", `pause_for_approval`), the client
asks the user and retries, and the resumed run carries the answer for that one call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp import types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from gateway.policy._prompt import approval_prompt

__all__ = [
    "APPROVAL_FORM",
    "ApprovalOutcome",
    "Approver",
    "can_elicit",
    "elicitation_approver",
    "no_approver",
    "outcome_of",
    "pause_for_approval",
]

log = logging.getLogger("gateway.policy")

ApprovalOutcome = Literal["approved", "declined", "unavailable", "pending"]
Approver = Callable[[str, dict[str, Any]], Awaitable[ApprovalOutcome]]
"""Asks the user whether one tool call (namespaced name, wire arguments) may go ahead."""

APPROVAL_FORM: dict[str, Any] = {"type": "object", "properties": {}}
"""No fields: pressing Accept approves, Decline or Cancel refuses (the prompt says what is asked)."""

_ANY_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())
_FORM_ELICITATION = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
)


def can_elicit(session: ServerSession) -> bool:
    """Whether this client said it can show the user a form (an empty elicitation object means form)."""
    return session.check_client_capability(_FORM_ELICITATION) or session.check_client_capability(
        _ANY_ELICITATION
    )


def outcome_of(answer: types.ElicitResult) -> ApprovalOutcome:
    """The user's answer: Accept approves (an explicit `"approve": false` from an older form declines)."""
    content = answer.content or {}
    approved = answer.action == "accept" and content.get("approve", True) is not False
    return "approved" if approved else "declined"


async def no_approver(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
    """For callers with no user to ask (the CLI, headless clients): every approval is unavailable."""
    return "unavailable"


def elicitation_approver(session: ServerSession, request_id: types.RequestId | None) -> Approver:
    """Asks the user of a handshake-era session inline, tied to the execute_code request."""
    if not can_elicit(session):
        return no_approver

    async def approve(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
        try:
            message = approval_prompt(tool, arguments)
            answer = await session.elicit_form(message, APPROVAL_FORM, related_request_id=request_id)
        except MCPError as exc:  # no back-channel, or the client answered with an error
            log.warning("approval request failed", extra={"tool": tool, "error": str(exc)})
            return "unavailable"
        return outcome_of(answer)

    return approve


async def pause_for_approval(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
    """For 2026-07-28 runs: every call that needs approval pauses the run, to be asked about by the client."""
    return "pending"
