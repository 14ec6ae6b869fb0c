"""Approval rounds on the wire: what a retry resumes with, and what the paused round asks."""

from __future__ import annotations

import pytest
from mcp import types

from gateway import ApprovalNeeded, Resume
from gateway.policy.elicitation import APPROVAL_FORM, approval_prompt
from gateway.server._approvals import APPROVAL_INPUT, approval_request, resume_of

CODE = {"code": "tools.repo.delete(name='x')"}


def retry(answer: types.InputResponse | None, state: str | None = "sealed") -> types.CallToolRequestParams:
    responses = None if answer is None else {APPROVAL_INPUT: answer}
    return types.CallToolRequestParams(
        name="execute_code", arguments=CODE, input_responses=responses, request_state=state
    )


def test_a_first_call_resumes_nothing_whatever_answers_it_carries() -> None:
    accept = types.ElicitResult(action="accept", content={})
    assert resume_of(retry(accept, state=None)) is None


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (types.ElicitResult(action="accept", content={}), "approved"),
        (types.ElicitResult(action="accept"), "approved"),
        (types.ElicitResult(action="decline"), "declined"),
        (types.ElicitResult(action="cancel"), "declined"),
        # No answer, or an answer of another kind: refused, never made unasked.
        (None, "declined"),
        (types.ListRootsResult(roots=[]), "declined"),
    ],
)
def test_a_retry_resumes_with_the_users_answer(answer: types.InputResponse | None, outcome: str) -> None:
    assert resume_of(retry(answer)) == Resume("sealed", outcome)  # type: ignore[arg-type]


def test_the_paused_round_asks_one_question_showing_the_exact_call() -> None:
    needed = ApprovalNeeded("repo.delete", {"name": "x"}, "plain state")
    request = approval_request(needed)
    assert request.request_state == "plain state"  # the SDK's boundary seals it on the way out
    assert request.input_requests is not None
    [(key, ask)] = request.input_requests.items()
    assert key == APPROVAL_INPUT
    assert isinstance(ask, types.ElicitRequest)
    assert isinstance(ask.params, types.ElicitRequestFormParams)
    assert ask.params.message == approval_prompt("repo.delete", {"name": "x"})
    assert ask.params.requested_schema == APPROVAL_FORM
