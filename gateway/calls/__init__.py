"""The core: the gateway's lifecycle and entry points, the call pipeline, approvals, resume, exposed tools."""

from gateway.calls._approvals import Approvals, Inline, InRounds
from gateway.calls._exposed import ExposedTool, expose_tools
from gateway.calls._gateway import Gateway
from gateway.calls._pipeline import Progress
from gateway.calls._pool import child_pool, gateway_secrets
from gateway.calls._resume import JOURNAL_BYTES_PER_STATE_BYTE, ApprovalNeeded, Resume
from gateway.calls._sandbox_loader import new_sandbox

__all__ = (
    "JOURNAL_BYTES_PER_STATE_BYTE",
    "ApprovalNeeded",
    "Approvals",
    "ExposedTool",
    "Gateway",
    "InRounds",
    "Inline",
    "Progress",
    "Resume",
    "child_pool",
    "expose_tools",
    "gateway_secrets",
    "new_sandbox",
)
