"""Approvals for calls made inside execute_code, on both protocol eras.

Handshake era (2025-11-25 and older): the server asks with `elicitation/create` while the call
waits. 2026-07-28: a server may no longer ask on its own, so the run pauses at the call and
execute_code answers `InputRequiredResult`: one elicitation (the approval prompt) and a
`requestState`. The client asks the user and retries the same call with the answer and the
state; the run resumes from the state in whichever process gets the retry.

The SDK's `RequestStateBoundary` seals every state leaving the server and verifies every one coming
back (AES-GCM under the approvals key, the call it belongs to, an expiry, the audience): handlers
here only ever see states this service minted, in plaintext.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.calls import ApprovalNeeded, Resume
from gateway.policy.config import ApprovalsConfig
from gateway.policy.elicitation import APPROVAL_FORM, approval_prompt, outcome_of

__all__ = [
    "APPROVAL_INPUT",
    "approval_request",
    "asks_in_rounds",
    "request_state_boundary",
    "resume_of",
]

APPROVAL_INPUT = "approval"
"""The key of the one input request an approval round carries."""


def request_state_boundary(config: ApprovalsConfig, audience: str) -> RequestStateBoundary:
    """The SDK middleware sealing paused runs under the config's key (else one made for this process)."""
    if config.key is None:
        security = RequestStateSecurity.ephemeral(ttl=config.ttl_seconds)
    else:
        security = RequestStateSecurity(keys=[config.key.get_secret_value()], ttl=config.ttl_seconds)
    return RequestStateBoundary(security, default_audience=audience)


def asks_in_rounds(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this request's protocol asks the user through input-required rounds (2026-07-28 on)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def resume_of(params: types.CallToolRequestParams) -> Resume | None:
    """The paused run a retry resumes, with the user's answer; None for a first call.

    A retry whose answer is missing resumes as declined: the call is refused, never made unasked.
    """
    if params.request_state is None:
        return None
    answer = (params.input_responses or {}).get(APPROVAL_INPUT)
    outcome = outcome_of(answer) if isinstance(answer, types.ElicitResult) else "declined"
    return Resume(params.request_state, outcome)


def approval_request(needed: ApprovalNeeded) -> types.InputRequiredResult:
    """The round that asks the user about the call a run paused at."""
    form = types.ElicitRequestFormParams(
        message=approval_prompt(needed.tool, needed.arguments), requested_schema=APPROVAL_FORM
    )
    return types.InputRequiredResult(
        input_requests={APPROVAL_INPUT: types.ElicitRequest(params=form)}, request_state=needed.state
    )
