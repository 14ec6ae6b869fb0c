"""What may be called, with which arguments, how often, and with whose approval."""

from gateway.policy._approval import ApprovalOutcome, Approver, elicitation_approver, no_approver
from gateway.policy._policy import Policy, is_destructive
from gateway.policy._prompt import approval_prompt
from gateway.policy._quotas import ExecutionQuota
from gateway.policy.config import PolicyConfig, RateLimit, ToolPolicy

__all__ = (
    "ApprovalOutcome",
    "Approver",
    "ExecutionQuota",
    "Policy",
    "PolicyConfig",
    "RateLimit",
    "ToolPolicy",
    "approval_prompt",
    "elicitation_approver",
    "is_destructive",
    "no_approver",
)
