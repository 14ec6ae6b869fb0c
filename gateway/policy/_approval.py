"""Per-call approval: the user approves each call of a tool the policy marks, through MCP elicitation.

Approving `execute_code` approves nothing inside it: every marked call asks again, showing the
exact tool and arguments. A client that cannot elicit gets a refusal, never a silent call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp import types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from gateway.policy._prompt import approval_prompt

__all__ = ["ApprovalOutcome", "Approver", "elicitation_approver", "no_approver"]

log = logging.getLogger("gateway.policy")

ApprovalOutcome = Literal["approved", "declined", "unavailable"]
Approver = Callable[[str, dict[str, Any]], Awaitable[ApprovalOutcome]]
"""Asks the user whether one tool call (namespaced name, wire arguments) may go ahead."""

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Allow this call", "default": False}},
    "required": ["approve"],
}
_FORM_ELICITATION = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
)


async def no_approver(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
    """For callers with no user to ask (the CLI, tests): every approval is unavailable."""
    return "unavailable"


def elicitation_approver(session: ServerSession, request_id: types.RequestId | None) -> Approver:
    """An approver that asks the user of this MCP session, tied to the execute_code request."""
    can_elicit = session.check_client_capability(_FORM_ELICITATION) or session.check_client_capability(
        types.ClientCapabilities(elicitation=types.ElicitationCapability())
    )

    async def approve(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
        if not can_elicit:
            return "unavailable"
        try:
            message = approval_prompt(tool, arguments)
            answer = await session.elicit_form(message, _SCHEMA, related_request_id=request_id)
        except MCPError as exc:  # no back-channel, or the client answered with an error
            log.warning("approval request failed", extra={"tool": tool, "error": str(exc)})
            return "unavailable"
        approved = answer.action == "accept" and bool((answer.content or {}).get("approve"))
        return "approved" if approved else "declined"

    return approve
