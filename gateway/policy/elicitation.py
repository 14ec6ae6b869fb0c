"""Asking the user over MCP elicitation, the server's side of an approval: a sub-face, since only the
server wing (and the escape suite acting as a client) speaks to the client's form."""

from gateway.policy._approval import APPROVAL_FORM, can_elicit, elicitation_approver, outcome_of
from gateway.policy._prompt import approval_prompt

__all__ = ("APPROVAL_FORM", "approval_prompt", "can_elicit", "elicitation_approver", "outcome_of")
