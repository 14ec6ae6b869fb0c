"""What may be called, with which arguments, how often, and with whose approval."""

from gateway.policy._approval import (
    APPROVAL_FORM,
    ApprovalOutcome,
    Approver,
    can_elicit,
    elicitation_approver,
    no_approver,
    outcome_of,
    pause_for_approval,
)
from gateway.policy._policy import Policy, is_destructive
from gateway.policy._prompt import approval_prompt
from gateway.policy._quotas import ExecutionQuota
from gateway.policy._roles import Policies, roles_of
from gateway.policy._uris import NonCanonicalUri, canonical_uri
from gateway.policy.config import ApprovalsConfig, PolicyConfig, RateLimit, RoleConfig, ToolPolicy

__all__ = (
    "APPROVAL_FORM",
    "ApprovalOutcome",
    "ApprovalsConfig",
    "Approver",
    "ExecutionQuota",
    "NonCanonicalUri",
    "Policies",
    "Policy",
    "PolicyConfig",
    "RateLimit",
    "RoleConfig",
    "ToolPolicy",
    "approval_prompt",
    "can_elicit",
    "canonical_uri",
    "elicitation_approver",
    "is_destructive",
    "no_approver",
    "outcome_of",
    "pause_for_approval",
    "roles_of",
)
