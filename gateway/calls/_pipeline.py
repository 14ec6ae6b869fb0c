"""The one pipeline every call a snippet makes goes through, whatever its kind.

A call is a `Call` value of one kind: `tools/call` (`_tool_calls.py`), `resources/read` or
`resources/list` (`_resources.py`). Its steps, in this order; a kind skips the steps it does not need:

    step            tools/call   resources/*   what
    0. secrets      yes          yes           a secret in the request ends the execution (`refuse_secrets`)
    1. resolve      tool         server        the name in the execution's catalog
    2. access       yes          yes           hidden is unknown; deny and allow refuse, naming the rule
    3. arguments    yes          -             Python names back to the child's, the inputSchema checked
    4. constraints  yes          -             the policy's `args` fragments on the wire arguments
    5. quota        yes          yes           per-execution counts and the shared rate windows
    6. approval     yes          -             a human approves the exact call, or the execution pauses
    7. middleware   yes          -             the team's own code around the child request
       child        yes          yes           the request in one of the child's slots (`child`)
    8. result       yes          yes           the child's answer as the value the snippet receives
    9. redaction    yes          yes           of that value, and of the text of any error (`redacted`)
    10. finish      yes          yes           metric, span, progress report, audit record (`finish`)

Work that grows with what the snippet or a child sent runs on the event loop only for small payloads
(`bounded_work`); larger ones go to a worker thread, so that one big or hostile call cannot stall
every other client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar, cast

import anyio
import anyio.to_thread
from mcp import types

from gateway.audit import NO_CALLER, Approval, AuditLog, Caller
from gateway.auth import Identity, Owner
from gateway.catalog import Catalog, CatalogEntry
from gateway.children import ChildPool
from gateway.errors import ApprovalRequired, ChildUnavailable, SecretInArguments, ToolCallError
from gateway.middleware import Chain
from gateway.policy import ApprovalOutcome, Approver, ExecutionQuota, Policy
from gateway.shared import Redactor
from gateway.telemetry import Telemetry, TraceSpan

__all__ = [
    "PROGRESS_SECONDS",
    "Call",
    "CallKind",
    "Execution",
    "ExecutionStart",
    "PausedCallAnswer",
    "Pipeline",
    "Progress",
    "ResourceNames",
    "bounded_work",
    "caller_of",
    "small",
]

log = logging.getLogger("gateway.tool_calls")

Progress = Callable[[int, float], Awaitable[None]]
"""Told (tool calls made so far, seconds elapsed) after each tool call and every PROGRESS_SECONDS."""

PROGRESS_SECONDS = 1.0

CallKind = Literal["tools/call", "resources/read", "resources/list"]
"""What a call asks a child for, as its span's `mcp.method.name` says."""

T = TypeVar("T")

REVOKED = (
    "the token this execution was started with is no longer in auth.tokens (a config reload removed or "
    "changed it): it reaches no child any more; start again with a current token"
)
"""The error of a call whose execution's static token a reload took away."""


def _vouched() -> bool:
    return True


# What may be scanned, validated or converted on the event loop: past this, a worker thread does it.
LOOP_WORK_NODES = 2_000
LOOP_WORK_CHARS = 32_768


@dataclass(frozen=True)
class PausedCallAnswer:
    """The user's answer to the call an execution paused at, for the round that resumes it.

    It answers the round's first call alone, and only if that call is the one the user was shown:
    if the first call is refused before it gets to approval (a quota filled meanwhile), the answer
    is dropped, never handed to a later call the user did not see.
    """

    outcome: ApprovalOutcome
    tool: str
    arguments_digest: str  # of the wire arguments the prompt showed, and the tool's callee (`wire_digest`)


@dataclass
class Execution:
    """What one execution's calls share: its id, the catalog and policy it started with (the
    caller's, under `policy.roles`), its quota, approver, and who asked for it."""

    execution_id: str
    catalog: Catalog
    policy: Policy
    approver: Approver
    progress: Progress | None = None
    caller: Caller = NO_CALLER
    # The gateway's middleware when the execution started: a config reload changes it for later ones only.
    middleware: Chain = field(default_factory=Chain)
    # Whether the token that started it still vouches for its caller: unlike its policy, asked at each
    # call, so that a token a reload removes stops the work it started (a background run's 10 minutes).
    vouched: Callable[[], bool] = _vouched
    quota: ExecutionQuota = field(init=False)
    calls: int = 0
    started: float = field(default_factory=time.monotonic)
    # When the execution began (wall clock, which every process shares): a round resumed after an
    # approval reports progress from there, so the client's progress keeps increasing across rounds.
    began_at: float = field(default_factory=time.time)
    paused: ApprovalRequired | None = None  # the call this execution paused at, waiting for the user
    answer: PausedCallAnswer | None = None  # in a resumed round, until its first call takes it
    span: TraceSpan | None = None  # the execution's span: each call's span is its child

    def __post_init__(self) -> None:
        self.quota = self.policy.new_execution(self.caller.owner)

    @property
    def holder(self) -> Owner | None:
        """Whose share of the sandbox's slots and of a child's call slots this execution takes: its
        authenticated caller (principal of its issuer, as the quota counts it); None when nobody is."""
        return self.caller.owner

    async def report(self) -> None:
        """Tell the client how far the execution is (best effort: never fails the execution)."""
        if self.progress is None:
            return
        with anyio.CancelScope(shield=True):  # a progress message is never half sent
            try:
                await self.progress(self.calls, max(time.time() - self.began_at, 0.0))
            except Exception:  # a client gone away must not fail the execution
                log.debug("progress notification failed", exc_info=True)

    async def heartbeat(self) -> None:
        """Report progress every PROGRESS_SECONDS until cancelled."""
        while True:
            await anyio.sleep(PROGRESS_SECONDS)
            await self.report()


@dataclass(frozen=True)
class ResourceNames:
    """A resource request's names as telemetry records a tool call's: its server, what it asked for."""

    server_name: str
    tool_name: str  # the URI read, or resources/list
    qualified: str  # `server:uri`, as the audit log names it


@dataclass(frozen=True)
class ExecutionStart:
    """What each execution a caller starts begins with: the caller's policy and catalog, the
    middleware in force, who asks, and where its progress goes."""

    catalog: Catalog
    policy: Policy
    caller: Caller
    middleware: Chain
    progress: Progress | None = None
    vouched: Callable[[], bool] = _vouched
    """Whether the caller's token is still in force (`Execution.vouched`)."""

    def execution(self, execution_id: str, approver: Approver, *, reports: bool = True) -> Execution:
        """A new execution from this start; `reports` False: one that tells the client no progress."""
        progress = self.progress if reports else None
        return Execution(
            execution_id,
            self.catalog,
            self.policy,
            approver,
            progress,
            self.caller,
            self.middleware,
            vouched=self.vouched,
        )


def caller_of(
    identity: Identity | None, client: types.Implementation | None, roles: tuple[str, ...]
) -> Caller:
    """Who asks for an execution, as the audit log names them: the authenticated caller, its client."""
    return Caller(
        principal=identity.principal if identity else None,
        issuer=identity.owner.issuer if identity else None,
        roles=roles,
        oauth_client=identity.client if identity else None,
        client_name=client.name if client else None,
        client_version=client.version if client else None,
    )


@dataclass
class Call:
    """One call of an execution, of one kind, from its first step to its finish."""

    execution: Execution
    name: str  # as the snippet wrote it (for a resource request: `server:uri`)
    wire: dict[str, Any]  # the arguments as the child gets them, once checked
    kind: CallKind = "tools/call"
    entry: CatalogEntry | None = None  # the tool a tool call resolved to
    resource: ResourceNames | None = None  # the server and URI a resource request resolved to
    approval: Approval = "not_required"
    started: float = field(default_factory=time.monotonic)
    span: TraceSpan | None = None  # ended, and its metrics counted, with its audit record
    answered_error: bool = False  # the child answered with isError
    middleware: str | None = None  # the middleware that refused or failed it, for its audit record

    @property
    def resolved(self) -> CatalogEntry | ResourceNames | None:
        """What the call resolved to (step 1), as telemetry names it; None before or without."""
        return self.entry if self.entry is not None else self.resource


class Pipeline:
    """The steps every kind of call shares, over a pool of children: 0, the child request, 9 and 10."""

    def __init__(
        self, pool: ChildPool, redactor: Redactor, audit: AuditLog | None, telemetry: Telemetry | None = None
    ) -> None:
        self.pool = pool
        self.redactor = redactor
        self.telemetry = telemetry or Telemetry()
        self._audit = audit

    def start(
        self, execution: Execution, name: str, wire: dict[str, Any], kind: CallKind = "tools/call"
    ) -> Call:
        """A call's first step: its value, and its span under the execution's."""
        call = Call(execution, name, wire, kind)
        call.span = self.telemetry.tool_call_started(execution.span, execution.execution_id, kind)
        return call

    def refuse_secrets(self, what: str, value: Any) -> None:
        """Step 0: end the execution if `value` holds a secret; `what` says where, never echoing the value."""
        label = self.redactor.secret_in(value)
        if label is not None:
            held = label.strip("[]").replace("REDACTED:", "the value of ").replace("REDACTED", "a secret")
            raise SecretInArguments(
                f"{what} carried {held}, which the gateway keeps from snippets and tools; the execution "
                "was ended. Children get their secrets from the config (env, headers), never through "
                "a snippet."
            )

    async def child(self, call: Call, request: Awaitable[T]) -> T:
        """The child's answer to `request`, under the call's span (the child's trace context descends
        from it); a child that is down is a ToolError to the snippet, and so is a call whose caller's
        token a reload took away (asked here, the last step before any child is reached)."""
        if not call.execution.vouched():
            close = getattr(request, "close", None)
            if close is not None:
                close()  # never awaited: no "coroutine was never awaited" warning
            raise ToolCallError(REVOKED)
        try:
            with self.telemetry.calling(call.span):
                return await request
        except ChildUnavailable as exc:
            raise ToolCallError(str(exc)) from exc

    def redacted(self, exc: BaseException) -> BaseException:
        """Step 9 for errors: a refusal's text as the snippet may read it."""
        if isinstance(exc, ToolCallError):
            exc.args = (self.redactor.redact(str(exc)),)
        return exc

    async def finish(self, call: Call, failure: BaseException | None) -> None:
        """Step 10, whatever happened: the metric and the span, the progress report, the audit record."""
        execution = call.execution
        execution.calls += 1
        self.telemetry.tool_call_finished(
            call.span, call.started, failure, call.resolved, call.approval, call.answered_error
        )
        await execution.report()
        if self._audit is None:
            return
        ms = round((time.monotonic() - call.started) * 1000, 3)
        # A tool name that resolved to nothing is recorded tersely (a digest of its arguments).
        resolved = call.kind != "tools/call" or call.entry is not None
        write = partial(
            self._audit.record,
            lambda audit: audit.tool_call(
                execution.execution_id,
                call.name,
                call.wire,
                ms=ms,
                error=failure,
                approval=call.approval,
                caller=execution.caller,
                middleware=call.middleware,
                resolved=resolved,
            ),
        )
        # Redacting, measuring and digesting large arguments is work the event loop never does;
        # shielded, so that a cancelled call is still recorded.
        with anyio.CancelScope(shield=True):
            await bounded_work(not small(call.wire), write)


async def bounded_work(large: bool, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` on the event loop, or on a worker thread when its payload is `large`."""
    if not large:
        return work(*args)
    return await anyio.to_thread.run_sync(work, *args)


def small(value: object) -> bool:
    """Whether a JSON-like value is within the event loop's budget; stops counting past it."""
    nodes, chars, todo = 0, 0, [value]
    while todo:
        item = todo.pop()
        nodes += 1
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            mapping = cast("dict[str, Any]", item)
            todo.extend(mapping.values())
            chars += sum(len(key) for key in mapping)
        elif isinstance(item, list | tuple):
            todo.extend(cast("list[Any]", item))
        if nodes > LOOP_WORK_NODES or chars > LOOP_WORK_CHARS:
            return False
    return True
