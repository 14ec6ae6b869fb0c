"""What may be called, with which arguments, how often, and with whose approval."""

from gateway.policy._approval import ApprovalOutcome, Approver, no_approver, pause_for_approval
from gateway.policy._policy import Policy
from gateway.policy._quotas import ExecutionQuota
from gateway.policy._roles import Policies
from gateway.policy._uris import NonCanonicalUri, canonical_uri

__all__ = (
    "ApprovalOutcome",
    "Approver",
    "ExecutionQuota",
    "NonCanonicalUri",
    "Policies",
    "Policy",
    "canonical_uri",
    "no_approver",
    "pause_for_approval",
)
