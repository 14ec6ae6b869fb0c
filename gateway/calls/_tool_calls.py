"""One tool call from a snippet, from the name it wrote to the value it receives.

A tool call is the kind of call (`_pipeline.py`) that goes through every step; `ToolCalls.call`
states their order for it:

0. secrets     a name or arguments holding a value the gateway keeps secret end the execution, before
               anything could echo them back with the secret's place marked
1. resolve     the name in the execution's catalog (an idle lazy child that never listed is started)
2. access      hidden tools are unknown; deny, allow and read_only refuse, before a schema is described
3. arguments   Python names back to the child's, `None` for optional ones dropped, the inputSchema checked
4. constraints the policy's `args` fragments, on exactly the wire arguments the child will get
5. quota       per-execution counts and the shared rate windows, counted only once 0-4 passed
6. approval    a human approves the exact call, where the policy asks for it; on 2026-07-28 the
               run pauses here instead (ApprovalRequired), the call's quota given back, until the
               client has asked the user and the execution resumes in a later round, whose first call
               (the paused one, replayed to) alone gets the answer
7. middleware  the team's own code (`middleware`, first listed outermost) around 7-9: it sees the call
               as checked (wire arguments), may change the arguments (checked again: 0, 3 and 4, so
               it cannot pass what the policy refuses), refuse, or return another value (8's, already
               redacted, is what it gets); one that fails or runs too long fails the call closed
   child       the call itself, bounded by the host's per-call timeout (the middleware's time too)
8. result      the CallToolResult as the Python value the snippet receives
9. redaction   of that value (again, of what a middleware returned), and of the text of any error,
               whatever the step that raised it
10. record     the audit record, the metrics and the call's span, and a progress report, whatever
               happened; and the shape of a value the snippet receives from a tool without an
               output schema, which its signature shows from then on
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar, cast

from mcp import types

from gateway.audit import AuditLog
from gateway.calls._pipeline import Call, Execution, PausedCallAnswer, Pipeline, bounded_work, small
from gateway.catalog import (
    Catalog,
    CatalogEntry,
    docs,
    precheck_calls,
    prepare_arguments,
    tool_result_value,
    unknown_tool_message,
)
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS
from gateway.children import ChildPool, ChildState
from gateway.errors import ApprovalRequired, PolicyDenied, ResumeRefused, ToolCallError
from gateway.middleware import Call as SeenCall
from gateway.middleware import Passage
from gateway.policy import ApprovalOutcome, Policy
from gateway.sandbox.journal import arguments_digest
from gateway.shared import Redactor
from gateway.telemetry import Telemetry

__all__ = ["ToolCalls", "callee_of", "unknown_tool_message", "wire_digest"]

T = TypeVar("T")


def wire_digest(arguments: dict[str, Any], callee: str = "") -> str:
    """The digest of a call's wire arguments and of the tool's `callee` (`callee_of`), as an approval is
    bound to them."""
    bound: Any = {"callee": callee, "arguments": arguments} if callee else arguments
    return arguments_digest(json.dumps(bound, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def callee_of(entry: CatalogEntry) -> str:
    """The child's own names for a tool: what an approval shown under its Python name stays bound to,
    since a Python name can pass to another tool when the server's tool list changes."""
    return json.dumps([entry.server_name, entry.tool_name])


class ToolCalls:
    """The tool-call pipeline over a pool of children, under each execution's policy, redacted and audited."""

    def __init__(
        self,
        pool: ChildPool,
        redactor: Redactor,
        audit: AuditLog | None,
        catalog: Callable[[], Catalog],
        telemetry: Telemetry | None = None,
    ) -> None:
        self._pipeline = Pipeline(pool, redactor, audit, telemetry)
        self._pool = pool
        self._redactor = redactor
        self._catalog = catalog  # the current catalog, for a lazy child's first listing

    async def call(self, execution: Execution, name: str, arguments: dict[str, Any]) -> Any:
        """Call `name` for the snippet of `execution`; raises ToolCallError, with any secret redacted."""
        admitted = await self.admit(execution, name, arguments)
        return await self.complete(admitted)

    async def prepare(
        self, execution: Execution, name: str, arguments: dict[str, Any]
    ) -> Callable[[], Awaitable[Any]]:
        """Admit a call now (see `admit`); return what completes it, for a call run side by side."""
        return partial(self.complete, await self.admit(execution, name, arguments))

    async def admit(self, execution: Execution, name: str, arguments: dict[str, Any]) -> Call:
        """Steps 0-6: the call as the child will get it, once it may be made; or the refusal.

        Calls a snippet runs side by side are admitted one at a time, in the order it made them, so
        quotas count exactly and the user is asked about one call at a time."""
        call = self._pipeline.start(execution, name, arguments)
        answer, execution.answer = (
            execution.answer,
            None,
        )  # the first call of a resumed round takes it, or no one
        try:
            self._pipeline.refuse_secrets("a tool name", name)
            call.entry = await self._resolve(execution.catalog, name)
            call.wire = await bounded_work(
                not small(arguments), self._checked_arguments, execution.policy, call.entry, arguments
            )
            await execution.quota.acquire(call.entry)
            if execution.policy.needs_approval(call.entry):
                if answer is not None:
                    call.approval = _answer_for(answer, call.entry, call.wire)
                else:
                    call.approval = await execution.approver(call.entry.qualified, call.wire)
                if call.approval == "pending":
                    await execution.quota.release(call.entry)  # asked again when the execution resumes
                    execution.paused = ApprovalRequired(
                        call.entry.qualified, call.wire, callee_of(call.entry)
                    )
                    raise execution.paused
                _raise_unless_approved(call.entry.qualified, call.approval)
            return call
        except BaseException as exc:
            await self._pipeline.finish(call, self._pipeline.redacted(exc))
            raise

    async def complete(self, call: Call) -> Any:
        """Steps 7-10 of an admitted call: the child's answer as the snippet's value, redacted."""
        if call.execution.middleware:
            value = await self._complete(call, partial(self._through_middleware, raw=False))
        else:
            value = await self._complete(call, partial(self._from_child, convert=self._value_of))
        shapes = call.execution.catalog.shapes
        if shapes is not None and call.entry is not None:
            shapes.observe(call.entry, value)  # bounded work: a few items of each list, a few levels
        return value

    async def complete_raw(self, call: Call) -> types.CallToolResult:
        """Steps 7, 9 and 10 of an admitted call: the child's CallToolResult itself, redacted (or, if
        a middleware returned another value, that value as a result)."""
        if call.execution.middleware:
            return await self._complete(call, partial(self._through_middleware, raw=True))
        return await self._complete(call, partial(self._from_child, convert=self._redacted_result))

    async def _complete(self, call: Call, answer: Callable[[Call, CatalogEntry], Awaitable[T]]) -> T:
        if call.entry is None:
            raise RuntimeError("complete() takes a call that admit() returned")
        failure: BaseException | None = None
        try:
            answered = await answer(call, call.entry)
            if call.answered_error:  # passed on as it is (complete_raw), and audited as the failure it is
                failure = ToolCallError(f"{call.entry.qualified} answered with an error (isError)")
            return answered
        except BaseException as exc:
            failure = self._pipeline.redacted(exc)
            raise
        finally:
            await self._pipeline.finish(call, failure)

    async def _from_child(
        self, call: Call, entry: CatalogEntry, convert: Callable[[types.CallToolResult], T]
    ) -> T:
        """Steps 7 (child) and 8: the child's answer, converted by `convert` (which redacts)."""
        result = await self._child(call, entry)
        call.answered_error = bool(result.is_error)  # a snippet gets it as a ToolError (step 8)
        return await bounded_work(not small(_payload(result)), convert, result)

    async def _child(self, call: Call, entry: CatalogEntry) -> types.CallToolResult:
        holder = call.execution.holder
        request = self._pool.call_tool(entry.server_name, entry.tool_name, call.wire, holder=holder)
        return await self._pipeline.child(call, request)

    async def _through_middleware(self, call: Call, entry: CatalogEntry, *, raw: bool) -> Any:
        """Step 7 with the execution's middleware around the child: what the outermost returns, redacted
        again (step 9); for an exposed tool (`raw`), the child's own result if it was passed on."""
        execution = call.execution
        child: list[types.CallToolResult] = []  # its answer, once the call reached it
        inner: list[Any] = []  # the value the innermost middleware got, or the error it raised

        async def innermost(final: SeenCall, passage: Passage) -> Any:
            if passage.changed_by is not None:  # checked again: a middleware is no way around policy
                call.middleware = passage.changed_by  # named in the audit record if they are refused
                call.wire = await self._rechecked(
                    execution.policy, entry, final.arguments, passage.changed_by
                )
                call.middleware = None
            result = await self._child(call, entry)
            child.append(result)
            call.answered_error = bool(result.is_error)
            try:
                inner.append(await bounded_work(not small(_payload(result)), self._value_of, result))
            except ToolCallError as exc:  # isError: the middleware sees the snippet's ToolError
                inner.append(exc)
                raise
            return inner[0]

        caller = execution.caller
        seen = SeenCall(
            entry.qualified,
            entry.server_name,
            call.wire,
            caller.principal,
            caller.roles,
            execution.execution_id,
            caller.issuer,
        )
        passage = Passage()
        try:
            value = await execution.middleware.run(seen, innermost, passage)
        except ToolCallError as exc:
            call.middleware = passage.blamed or call.middleware
            if raw and child and inner and exc is inner[0]:  # the child's isError, passed on as it is
                return self._redacted_result(child[0])
            raise
        if inner and value is inner[0]:  # passed on unchanged: already redacted (step 9)
            return self._redacted_result(child[0]) if raw else value
        call.answered_error = False  # what a middleware returned instead is the call's answer
        value = await bounded_work(not small(value), self._redactor.redact_json, value)
        return _as_result(value) if raw else value

    async def _rechecked(
        self, policy: Policy, entry: CatalogEntry, wire: dict[str, Any], changed_by: str
    ) -> dict[str, Any]:
        """Steps 0 (arguments), 2, 3 and 4 again, on the arguments a middleware changed."""
        python_names = {wire_name: python for python, wire_name in entry.argument_names.items()}
        # A copy of its own: what is checked is what the child gets, whatever the middleware does next.
        arguments = {python_names.get(name, name): value for name, value in copy.deepcopy(wire).items()}
        try:
            return await bounded_work(not small(arguments), self._checked_arguments, policy, entry, arguments)
        except ToolCallError as exc:
            exc.args = (f"{exc} (in the arguments as middleware {changed_by} changed them)",)
            raise

    def _redacted_result(self, result: types.CallToolResult) -> types.CallToolResult:
        """A secret the gateway expanded never reaches the snippet, in a result or a child's error text."""
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return types.CallToolResult.model_validate(self._redactor.redact_json(dumped))

    def read_catalog(
        self,
        execution: Execution,
        service: str,
        payload: dict[str, Any],
        *,
        max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
    ) -> Any:
        """What the snippet asks of its execution's catalog: `@search` (a query of at most `max_query_chars`,
        `search.max_query_chars`), `@docs`, or `@precheck`."""
        if service == "@precheck":
            return self.precheck(execution, payload.get("calls"))
        return docs.read_docs(execution.catalog, service, payload, max_query_chars)

    def precheck(self, execution: Execution, calls: object) -> dict[str, Any]:
        """The snippet's literal calls (as the guest found them) checked before it runs: the refusals
        they would meet at steps 1-3, each as the call would get it, redacted."""
        # Step 0, as each of these calls would meet it when made: the findings quote the snippet's
        # names, which redacted in place would tell, by the label's place, which candidate is a secret.
        self._pipeline.refuse_secrets("the snippet's tool calls", _literal_parts(calls))
        findings = precheck_calls(execution.catalog, calls, access=partial(_access_refusal, execution.policy))
        return {
            "findings": [
                {"line": finding.line, "message": self._redactor.redact(finding.message)}
                for finding in findings
            ]
        }

    def _checked_arguments(
        self, policy: Policy, entry: CatalogEntry, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """Steps 0 (arguments) and 2-4: what the child will get, or the refusal."""
        self._pipeline.refuse_secrets(f"the arguments of {entry.qualified}", arguments)
        policy.check_access(entry)
        wire = prepare_arguments(entry, arguments)
        policy.check_arguments(entry, wire)
        return wire

    def _value_of(self, result: types.CallToolResult) -> Any:
        """Steps 8-9. A secret the gateway expanded never reaches the snippet, so no transform can leak
        it: neither in a result nor in the text of a child's error."""
        return self._redactor.redact_json(tool_result_value(result))

    async def _resolve(self, catalog: Catalog, name: str) -> CatalogEntry:
        entry = catalog.get(name)
        if entry is None:
            # An idle lazy child that was never listed is started, and the name looked up in the
            # catalog it lists (which also says why a tool it lists is quarantined, say).
            catalog = await self._after_first_start(catalog, name)
            entry = catalog.get(name)
        if entry is None:
            raise ToolCallError(unknown_tool_message(catalog, name))
        return entry

    async def _after_first_start(self, catalog: Catalog, name: str) -> Catalog:
        """The catalog once the idle lazy server `name` names has listed its tools; else `catalog`."""
        server = catalog.server(name.partition(".")[0])
        if server is None or server.state is not ChildState.IDLE:
            return catalog
        self._pool.start(server.name)
        await self._pool.wait_child(server.name)  # the host's per-call timeout bounds this wait
        return self._catalog()


def _as_result(value: Any) -> types.CallToolResult:
    """What a middleware returned for an exposed tool, as the result the client gets."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    structured = cast("dict[str, Any]", value) if isinstance(value, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _literal_parts(calls: object) -> list[Any]:
    """What the guest reports of each literal call that the call itself will carry: its name, keywords
    and literal arguments (not its line, nor its count of positional arguments)."""
    records = cast("list[Any]", calls) if isinstance(calls, list) else []
    return [
        {
            key: value
            for key, value in cast("dict[str, Any]", record).items()
            if key not in ("line", "positional")
        }
        for record in records
        if isinstance(record, dict)
    ]


def _payload(result: types.CallToolResult) -> list[Any]:
    """What converting and redacting a result will walk: its structured content and its blocks' text."""
    texts: list[Any] = [
        getattr(block, "text", None) or getattr(block, "data", None) for block in result.content
    ]
    return [result.structured_content, texts]


def _answer_for(answer: PausedCallAnswer, entry: CatalogEntry, wire: dict[str, Any]) -> ApprovalOutcome:
    """The user's answer, if this is the call they were shown (the same tool, by the child's own names
    too); else the execution ends before any call."""
    tool = entry.qualified
    if answer.tool != tool or answer.arguments_digest != wire_digest(wire, callee_of(entry)):
        raise ResumeRefused(
            f"the call resumed after the approval ({tool}) is not the call the user was shown "
            f"({answer.tool}, with those arguments): the servers' tools changed meanwhile, so the run "
            "was stopped; run the snippet again"
        )
    return answer.outcome


def _raise_unless_approved(tool: str, outcome: ApprovalOutcome) -> None:
    if outcome == "approved":
        return
    if outcome == "declined":
        raise PolicyDenied(
            f"{tool} needs the user's approval (policy.approve) and the user declined", rule="approve"
        )
    raise PolicyDenied(
        f"{tool} needs the user's approval (policy.approve), but this client cannot ask the user "
        "(no MCP elicitation: a headless or non-interactive client). Run the snippet from an "
        "interactive client that can approve it, or have the team grant the tool in its policy",
        rule="approve",
    )


def _access_refusal(policy: Policy, entry: CatalogEntry) -> str | None:
    """What a call of `entry` would be refused with at step 2 under `policy`, or None."""
    try:
        policy.check_access(entry)
    except ToolCallError as exc:
        return str(exc)
    return None
