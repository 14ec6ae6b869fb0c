"""How a call's approvals are asked: inline while it waits, or in rounds (MCP 2026-07-28)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.calls._resume import Resume
from gateway.policy import Approver, no_approver

__all__ = ["Approvals", "InRounds", "Inline"]


@dataclass(frozen=True)
class Inline:
    """Approvals asked while the call waits (the handshake era): `approver` asks the user."""

    approver: Approver = no_approver


@dataclass(frozen=True)
class InRounds:
    """Approvals in rounds: a call needing one pauses the execution (ApprovalNeeded); `resume` carries the
    state and the user's answer into the next round."""

    resume: Resume | None = None


Approvals = Inline | InRounds
"""One entry point per concept takes this instead of a twin per protocol era."""
