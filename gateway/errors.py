"""Every error the gateway raises or reports.

    GatewayError                  root: catch this to catch everything below
    ├── ConfigError               a config file or value is wrong (exit code 2)
    ├── SandboxUnavailable        the component is missing or cannot be loaded
    ├── TokenRefused              an HTTP client's bearer token is missing, unknown, expired, or not for us
    ├── BackgroundRefused         a background execution cannot start (a `background` limit) or be found
    ├── ToolCallError             a tool caller's failure; the snippet sees a catchable ToolError
    │   ├── ChildUnavailable      the child server is unknown, failed to start, or its connection was lost
    │   ├── PolicyDenied          the policy refuses the call (deny, allow, read_only, argument constraints)
    │   ├── QuotaExceeded         a policy quota or rate limit refuses the call
    │   ├── StateUnavailable      the shared state store (`state`) cannot be reached: fails closed
    │   └── MiddlewareFailed      a team's middleware raised, timed out or misused the call: failed closed
    └── ExecutionFailed           one execution did not succeed; the gateway keeps serving
        ├── SnippetError          the snippet raised (its own traceback is attached)
        ├── CapabilityDenied      the snippet reached a capability the sandbox lacks
        ├── SecretInArguments     a tool call carried a value the gateway keeps secret
        ├── ApprovalRequired      the run paused at a call the user must approve (2026-07-28 rounds)
        ├── ResumeRefused         a paused run's state cannot be resumed (used, stale, or diverged)
        ├── GuestCrashed          the guest trapped for another reason
        ├── ExecutionCancelled    the client cancelled the request
        │   └── EndedByShutdown   the gateway's shutdown ended a background execution
        └── LimitExceeded         a sandbox limit ended the execution
            ├── FuelExhausted, WallTimeExceeded, MemoryLimitExceeded, StackExhausted
            ├── ToolCallLimitExceeded, ToolPayloadTooLarge, CodeTooLarge
            ├── ShownTooMany, ShownTooLarge   more images/audio/files shown than the caps allow
            ├── ApprovalLimitExceeded  a run paused too often, or with too much to carry (approvals.*)
            └── GatewayBusy       every slot busy and the queue full

Errors from wasmtime are translated once, at the sandbox boundary.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApprovalLimitExceeded",
    "ApprovalRequired",
    "BackgroundRefused",
    "CapabilityDenied",
    "ChildUnavailable",
    "CodeTooLarge",
    "ConfigError",
    "EndedByShutdown",
    "ExecutionCancelled",
    "ExecutionFailed",
    "FuelExhausted",
    "GatewayBusy",
    "GatewayError",
    "GuestCrashed",
    "LimitExceeded",
    "MemoryLimitExceeded",
    "MiddlewareFailed",
    "PolicyDenied",
    "QuotaExceeded",
    "ResumeRefused",
    "SandboxUnavailable",
    "SecretInArguments",
    "ShownTooLarge",
    "ShownTooMany",
    "SnippetError",
    "StackExhausted",
    "StateUnavailable",
    "TokenRefused",
    "ToolCallError",
    "ToolCallLimitExceeded",
    "ToolPayloadTooLarge",
    "WallTimeExceeded",
]


class GatewayError(Exception):
    """Root of every gateway error."""


class ConfigError(GatewayError):
    """The configuration is invalid; the message names every bad key."""


class SandboxUnavailable(GatewayError):
    """The sandbox component is missing, stale or cannot be loaded."""


class BackgroundRefused(GatewayError):
    """A background execution cannot start (a `background` limit is reached), or the id asked about is
    unknown: never started, expired past `background.keep_seconds`, or started by another caller."""


class TokenRefused(GatewayError):
    """An HTTP client's bearer token is missing, unknown, expired, or was not issued for this gateway.

    `reason` is a fixed phrase for logs (`expired`, `wrong audience`...), `detail` says which claim or
    key; neither ever holds the token. The client sees only a 401.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"bearer token refused: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason
        self.detail = detail


class ToolCallError(GatewayError):
    """Raised by a tool caller when a call fails; the snippet sees it as a catchable ToolError."""

    @property
    def kind(self) -> str:
        """The class name the snippet's ToolError reports: `ToolError` for this class itself."""
        return "ToolError" if type(self) is ToolCallError else type(self).__name__


class ChildUnavailable(ToolCallError):
    """The child server is unknown, failed to start, or lost its connection; other children still serve."""


class PolicyDenied(ToolCallError):
    """The policy refuses the call; `rule` names the config rule (never a hidden tool)."""

    def __init__(self, message: str, *, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


class QuotaExceeded(ToolCallError):
    """A policy quota refuses the call: `quota` is its config path, `limit` its value, `retry_after` in s."""

    def __init__(self, message: str, *, quota: str, limit: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.retry_after = retry_after  # None for per-execution quotas: waiting frees nothing


class StateUnavailable(ToolCallError):
    """The state store replicas share (`state`) cannot be reached or did not answer in time: what needs
    it (approvals, rate windows, per-caller caps) fails closed; the message names the store, never a
    credential, and what to check."""


class MiddlewareFailed(ToolCallError):
    """A middleware (`middleware` in the config) raised something other than `Refused`, took longer
    than `middleware_timeout_seconds`, or misused the call: the call fails closed, never reaching the
    child past it. `middleware` is its import path; the message names it, never its traceback."""

    def __init__(self, message: str, *, middleware: str) -> None:
        super().__init__(message)
        self.middleware = middleware


class ExecutionFailed(GatewayError):
    """An execution ended without success. `category` groups the subclasses for clients."""

    category = "crash"


class SnippetError(ExecutionFailed):
    """The snippet raised an exception."""

    category = "snippet"

    def __init__(self, message: str, *, exc_type: str, traceback: str = "") -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.traceback = traceback


class CapabilityDenied(ExecutionFailed):
    """The snippet reached a capability the sandbox does not have (filesystem, network, clock...)."""

    category = "denied"


class SecretInArguments(ExecutionFailed):
    """A tool call's name or arguments held a value the gateway keeps secret: the run is ended.

    Ended rather than refused, so that a snippet cannot probe for a secret call after call.
    """

    category = "denied"


class ApprovalRequired(ExecutionFailed):
    """The run stopped at a call the user must approve; the client asks and retries (2026-07-28).

    Not a failure the model sees: the server turns it into an input-required round.
    """

    category = "pending"

    def __init__(self, tool: str, arguments: dict[str, Any], callee: str = "") -> None:
        super().__init__(f"paused: {tool} needs the user's approval (policy.approve)")
        self.tool = tool
        self.arguments = arguments
        self.callee = callee  # the child's own names for the tool, which the approval is bound to too


class ResumeRefused(ExecutionFailed):
    """A paused run's state was already used, belongs to another snippet or build, or its replay
    diverged from the journal: the run is not resumed."""

    category = "denied"


class GuestCrashed(ExecutionFailed):
    """The guest trapped for a reason that is not a limit or a denied capability."""

    category = "crash"


class LimitExceeded(ExecutionFailed):
    """A sandbox limit ended the execution."""

    category = "limit"


class FuelExhausted(LimitExceeded):
    """The snippet used all its CPU fuel (`sandbox.fuel`)."""


class WallTimeExceeded(LimitExceeded):
    """The snippet ran past its wall-clock budget (`sandbox.timeout_seconds`)."""


class MemoryLimitExceeded(LimitExceeded):
    """The snippet needed more linear memory than `sandbox.memory_bytes`."""


class StackExhausted(LimitExceeded):
    """The snippet recursed past the wasm stack (`sandbox.max_wasm_stack_bytes`)."""


class ToolCallLimitExceeded(LimitExceeded):
    """The snippet made more tool calls than `sandbox.max_tool_calls`."""


class ToolPayloadTooLarge(LimitExceeded):
    """A tool call's arguments or result exceeded its byte cap."""


class ShownTooMany(LimitExceeded):
    """The snippet showed more items (images, audio, files) than `sandbox.max_shown_items`."""


class ShownTooLarge(LimitExceeded):
    """What the snippet showed is more bytes than `sandbox.max_shown_bytes`."""


class CodeTooLarge(LimitExceeded):
    """The snippet itself is larger than `sandbox.max_code_bytes`."""


class ApprovalLimitExceeded(LimitExceeded):
    """A run paused for approval more often than `approvals.max_rounds`, or with more to carry to
    the round that resumes it (its earlier tool results) than `approvals.max_state_bytes`."""


class ExecutionCancelled(ExecutionFailed):
    """The client cancelled the request while the snippet ran or waited on a tool."""

    category = "cancelled"


class EndedByShutdown(ExecutionCancelled):
    """The gateway shut down while a background execution ran: it was cancelled and recorded so."""


class GatewayBusy(LimitExceeded):
    """Every execution slot is busy and the queue is full."""
