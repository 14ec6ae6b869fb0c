"""Background executions on the wire: MCP tasks on both protocol eras, and plain execute_code
arguments for clients without them.

2025-11-25 (the handshake era): tasks are core. The server declares `tasks` (tools/call, list,
cancel) and execute_code's `execution.taskSupport: "optional"`; a `tools/call` carrying `task`
answers a `CreateTaskResult` at once; `tasks/get`, `tasks/result` (waits for the end), `tasks/list`
and `tasks/cancel` follow. The SDK sieves a handshake-era tools/call result to `CallToolResult`, so
that answer leaves from a server middleware (`task_middleware`), which the SDK trusts as written.

2026-07-28: the `io.modelcontextprotocol/tasks` extension (SEP-2663). A client that declares it in a
request's capabilities and asks for `background: true` gets `resultType: "task"` and a task handle;
`tasks/get` carries the status, progress, and once ended the result or error; `tasks/cancel` cancels.
An approval the run needs puts the task in `input_required`, its elicitation in `inputRequests`, and
`tasks/update` brings the answer. On the handshake era an approval is asked over the session while
the client stays connected; where no one can answer, the call is refused.

Clients with neither: `background: true` answers an id at once, `collect: <id>` the result (waiting a
little), `cancel: <id>` cancels it. Every way reaches the same store (`_background.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from mcp import types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError
from starlette.requests import Request

from gateway.auth import Identity, Owner, identity_of
from gateway.calls import Gateway, Inline
from gateway.errors import BackgroundRefused, PolicyDenied
from gateway.policy import ApprovalOutcome, Approver
from gateway.policy.elicitation import (
    APPROVAL_FORM,
    approval_prompt,
    can_elicit,
    elicitation_approver,
    outcome_of,
)
from gateway.sandbox.result import ErrorInfo, ExecutionResult
from gateway.server._arguments import BackgroundExecuteCodeArgs, execute_code_arguments
from gateway.server._background import BackgroundExecution, BackgroundExecutions
from gateway.server._gate import caller_of
from gateway.server._results import execution_tool_result

__all__ = [
    "COLLECT_WAIT_SECONDS",
    "TASKS_EXTENSION",
    "asks_for_task",
    "background_reply",
    "caller_of_request",
    "cancel_reply",
    "collect_reply",
    "install_task_methods",
    "start_background",
    "task_handle",
    "task_middleware",
    "tasks_capability",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
MISSING_CAPABILITY = -32021  # SEP-2663: tasks/* from a client that did not declare the extension
POLL_INTERVAL_MS = 1000
COLLECT_WAIT_SECONDS = 20.0
"""How long `collect` waits for a running execution before it answers with its progress: well under
the 60 s a client's request commonly times out at."""
CANCEL_WAIT_SECONDS = 5.0
"""How long a handshake-era tasks/cancel waits to answer with the task's end."""

_RENAMED_KEYS = {
    "(sandbox.timeout_seconds)": "(background.timeout_seconds)",
    "(sandbox.fuel)": "(background.fuel)",
}


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(types.RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(default_factory=dict[str, Any], alias="inputResponses")


def _identity() -> Identity | None:
    """Who sent the request being served, as the SDK's auth middleware put it in the request."""
    token = get_access_token()
    return None if token is None else identity_of(token)


def caller_of_request(ctx: ServerRequestContext[Any]) -> Owner:
    """Whose background runs this request reaches: its principal and issuer with `auth`; without
    it its session (handshake era) or address over HTTP, and stdio's one client."""
    request = ctx.request
    if isinstance(request, Request):
        return caller_of(request.scope)
    return Owner.of_stdio()


def _no_one_could_approve(tool: str) -> PolicyDenied:
    return PolicyDenied(
        f"{tool} needs the user's approval (policy.approve), but this execution runs in the background "
        "and no one could approve it. Run the snippet without background to be asked, or have the team "
        "grant the tool in its policy",
        rule="approve",
    )


def _through_the_task(execution: BackgroundExecution) -> Approver:
    """2026-07-28: the task goes to `input_required` with the approval's elicitation, until the
    client answers it with tasks/update (within the call's timeout, as any approval)."""

    async def approve(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
        form = types.ElicitRequestFormParams(
            message=approval_prompt(tool, arguments), requested_schema=APPROVAL_FORM
        )
        request = types.ElicitRequest(params=form).model_dump(by_alias=True, mode="json", exclude_none=True)
        response = await execution.ask(request, f"waiting for the user to approve {tool}")
        try:
            return outcome_of(types.ElicitResult.model_validate(response))
        except ValidationError:
            return "declined"  # an answer that is not one refuses: never a call made unasked

    return approve


def _background_approver(
    ctx: ServerRequestContext[Any], task: bool
) -> Callable[[BackgroundExecution], Approver]:
    """Who approves a background run's calls: the task's input requests (2026-07-28 tasks), the
    session's elicitation while it stays connected (handshake era), else no one (a refusal)."""
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    session = ctx.session if not modern and can_elicit(ctx.session) else None

    def approver_for(execution: BackgroundExecution) -> Approver:
        if modern and task:
            return _through_the_task(execution)
        # Not tied to the request: it has been answered already.
        asking = elicitation_approver(session, None) if session is not None else None

        async def approve(tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
            outcome = "unavailable" if asking is None else await asking(tool, arguments)
            if outcome == "unavailable":
                raise _no_one_could_approve(tool)
            return outcome

        return approve

    return approver_for


def _background_keys(result: ExecutionResult) -> ExecutionResult:
    """A limit's message names the `background` key that set it, not the `sandbox` one."""
    error = result.error
    if error is None or error.category != "limit":
        return result
    message = error.message
    for old, new in _RENAMED_KEYS.items():
        message = message.replace(old, new)
    renamed = ErrorInfo(type=error.type, category=error.category, message=message, traceback=error.traceback)
    return result.model_copy(update={"error": renamed})


async def start_background(
    gateway: Gateway,
    store: BackgroundExecutions,
    ctx: ServerRequestContext[Any],
    code: str,
    timeout: float | None,
    *,
    details: bool = False,
    task: bool = False,
) -> BackgroundExecution:
    """Start `code` in the background for the caller of this request (as an MCP task if `task`), its
    result to be the full record if `details`; BackgroundRefused past a limit."""
    identity = _identity()
    client = ctx.session.client_params.client_info if ctx.session.client_params else None
    config = store.config
    limits = gateway.config.sandbox.model_copy(
        update={"fuel": config.fuel, "timeout_seconds": config.timeout_seconds}
    )
    approver_for = _background_approver(ctx, task)

    async def work(execution: BackgroundExecution) -> types.CallToolResult:
        result = await gateway.execute_code(
            code,
            timeout,
            Inline(approver_for(execution)),
            client,
            execution.progress,
            identity,
            limits=limits,
            cancelled_as=execution.cancelled_as,
        )
        return execution_tool_result(_background_keys(result), details=details)

    return await store.start(caller_of_request(ctx), work)


def asks_for_task(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this 2026-07-28 request's client declared the tasks extension."""
    wanted = types.ClientCapabilities(extensions={TASKS_EXTENSION: {}})
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.session.check_client_capability(wanted)


def _iso(moment: datetime | None) -> str:
    return (moment or datetime.now(UTC)).isoformat().replace("+00:00", "Z")


def _ttl_ms(store: BackgroundExecutions, execution: BackgroundExecution) -> int:
    """From creation to when the task may be forgotten: an upper bound while it runs."""
    left = store.expires_in(execution)
    if left is None:
        return round((store.config.timeout_seconds + store.config.keep_seconds) * 1000)
    lived = (datetime.now(UTC) - execution.created_at).total_seconds()
    return round((lived + left) * 1000)


def _task(store: BackgroundExecutions, execution: BackgroundExecution, *, modern: bool) -> dict[str, Any]:
    task: dict[str, Any] = {
        "taskId": execution.id,
        "status": execution.status,
        "createdAt": _iso(execution.created_at),
        "lastUpdatedAt": _iso(execution.updated_at),
        ("ttlMs" if modern else "ttl"): _ttl_ms(store, execution),
        ("pollIntervalMs" if modern else "pollInterval"): POLL_INTERVAL_MS,
    }
    if execution.message is not None:
        task["statusMessage"] = execution.message
    return task


def task_handle(
    store: BackgroundExecutions, execution: BackgroundExecution, *, modern: bool
) -> dict[str, Any]:
    """The answer to a tools/call that became a task: 2026-07-28's flat handle, or 2025-11-25's
    `CreateTaskResult`."""
    if modern:
        return {"resultType": "task", **_task(store, execution, modern=True)}
    return {"task": _task(store, execution, modern=False)}


def _refused(exc: BackgroundRefused) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=str(exc))


async def _lookup(
    store: BackgroundExecutions, ctx: ServerRequestContext[Any], task_id: str
) -> BackgroundExecution:
    try:
        return await store.find(caller_of_request(ctx), task_id)
    except BackgroundRefused as exc:
        raise _refused(exc) from None


def _require_extension(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this request is 2026-07-28; MCPError -32021 if its client did not declare the extension."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    if not asks_for_task(ctx):
        raise MCPError(
            code=MISSING_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )
    return True


def _handshake_only(ctx: ServerRequestContext[Any]) -> None:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)


def _final_result(execution: BackgroundExecution) -> types.CallToolResult:
    if execution.result is not None:
        return execution.result
    text = f"background execution {execution.id} {execution.status}: {execution.message}"
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def install_task_methods(server: Any, store: BackgroundExecutions) -> None:
    """Serve tasks/get, tasks/cancel and tasks/update (2026-07-28), tasks/result and tasks/list
    (2025-11-25) from `store`."""

    async def get(ctx: ServerRequestContext[Any], params: TaskIdParams) -> dict[str, Any]:
        modern = _require_extension(ctx)
        execution = await _lookup(store, ctx, params.task_id)
        task = _task(store, execution, modern=modern)
        if modern and execution.input_requests:
            task["inputRequests"] = dict(execution.input_requests)
        if modern and execution.finished:
            if execution.status == "completed":
                task["result"] = _final_result(execution).model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
            elif execution.status == "failed":
                task["error"] = {"code": -32603, "message": execution.error or "the execution failed"}
        return task

    async def result(ctx: ServerRequestContext[Any], params: TaskIdParams) -> dict[str, Any]:
        _handshake_only(ctx)
        execution = await _lookup(store, ctx, params.task_id)
        execution = await store.wait_for(caller_of_request(ctx), execution.id, None)
        if execution.status != "completed":
            raise MCPError(
                code=INVALID_PARAMS, message=f"task {execution.id} {execution.status}: {execution.message}"
            )
        answer = _final_result(execution).model_dump(by_alias=True, mode="json", exclude_none=True)
        answer["_meta"] = {**answer.get("_meta", {}), RELATED_TASK: {"taskId": execution.id}}
        return answer

    async def listing(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        _handshake_only(ctx)
        return {"tasks": [_task(store, e, modern=False) for e in store.owned_by(caller_of_request(ctx))]}

    async def cancel(ctx: ServerRequestContext[Any], params: TaskIdParams) -> dict[str, Any]:
        modern = _require_extension(ctx)
        execution = await _lookup(store, ctx, params.task_id)
        if execution.finished and not modern:
            raise MCPError(
                code=INVALID_PARAMS, message=f"task {execution.id} has already ended ({execution.status})"
            )
        try:
            await store.cancel_anywhere(execution.owner, execution.id)
        except BackgroundRefused as exc:
            raise _refused(exc) from None
        if modern:
            return {}
        execution = await store.wait_for(execution.owner, execution.id, CANCEL_WAIT_SECONDS)
        return _task(store, execution, modern=False)

    async def update(ctx: ServerRequestContext[Any], params: TaskUpdateParams) -> dict[str, Any]:
        if not _require_extension(ctx):
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        execution = await _lookup(store, ctx, params.task_id)
        if not store.runs_here(execution) and execution.input_requests:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"task {execution.id} runs on another replica, and only that replica takes its "
                "answers: route tasks/update to it (a balancer keyed on the task id), or run the snippet "
                "without background to be asked inline",
            )
        execution.answer(params.input_responses)
        return {}

    server.add_request_handler("tasks/get", TaskIdParams, get)
    server.add_request_handler("tasks/result", TaskIdParams, result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, listing)
    server.add_request_handler("tasks/cancel", TaskIdParams, cancel)
    server.add_request_handler("tasks/update", TaskUpdateParams, update)


def tasks_capability() -> types.ServerTasksCapability:
    """The handshake era's `tasks` capability: task-augmented tools/call, tasks/list and tasks/cancel."""
    return types.ServerTasksCapability(
        list=types.TasksListCapability(),
        cancel=types.TasksCancelCapability(),
        requests=types.ServerTasksRequestsCapability(
            tools=types.TasksToolsCapability(call=types.TasksCallCapability())
        ),
    )


def _task_call(ctx: ServerRequestContext[Any]) -> BackgroundExecuteCodeArgs | None:
    """The arguments of an execute_code call to run as an MCP task, if this is one: on 2025-11-25 a
    call carrying `task`; on 2026-07-28 one asking `background: true` from a client that declared the
    tasks extension on this request. Arguments the handler would refuse are left to it to refuse."""
    params = ctx.params
    if ctx.method != "tools/call" or not isinstance(params, Mapping) or params.get("name") != "execute_code":
        return None
    raw = params.get("arguments")
    if not isinstance(raw, dict):
        return None
    run = execute_code_arguments(cast("dict[str, Any]", raw), background=True)
    if not isinstance(run, BackgroundExecuteCodeArgs) or run.code is None:
        return None  # refused by the handler, or a collect or cancel it answers
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if not run.background or not asks_for_task(ctx):
            return None
    elif params.get("task") is None:
        return None
    return run


def task_middleware(gateway: Gateway, store: BackgroundExecutions) -> ServerMiddleware[Any]:
    """A server middleware answering an execute_code call made as an MCP task with its task handle at
    once. A middleware, not the handler: the SDK sieves a handshake-era tools/call result to
    `CallToolResult`, and trusts a middleware's answer as written."""

    async def middleware(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        run = _task_call(ctx)
        if run is None or run.code is None:
            return await call_next(ctx)
        try:
            execution = await start_background(
                gateway, store, ctx, run.code, run.timeout, details=run.details, task=True
            )
        except BackgroundRefused as exc:
            raise _refused(exc) from None
        return task_handle(store, execution, modern=ctx.protocol_version in MODERN_PROTOCOL_VERSIONS)

    return middleware


def background_reply(store: BackgroundExecutions, execution: BackgroundExecution) -> types.CallToolResult:
    """The answer to `background: true` from a client without tasks: the id, and how to collect."""
    text = (
        f'Started in the background as "{execution.id}". Call execute_code with collect="{execution.id}" '
        f'for its result (kept {store.config.keep_seconds:g} s after it ends), or cancel="{execution.id}".'
    )
    return types.CallToolResult(content=[types.TextContent(text=text)])


def _status_reply(execution: BackgroundExecution) -> types.CallToolResult:
    text = f'Background execution "{execution.id}" is {execution.status}: {execution.message}.'
    if not execution.finished:
        text += " Collect it again later."
    return types.CallToolResult(content=[types.TextContent(text=text)])


async def collect_reply(
    store: BackgroundExecutions, caller: Owner, execution_id: str
) -> types.CallToolResult:
    """The result of `caller`'s background execution, waiting up to COLLECT_WAIT_SECONDS; its
    progress if it is still running."""
    execution = await store.wait_for(caller, execution_id, COLLECT_WAIT_SECONDS)
    if execution.status == "completed" and execution.result is not None:
        return execution.result
    if execution.finished:
        return types.CallToolResult(
            content=[types.TextContent(text=f'Background execution "{execution.id}": {execution.message}')],
            is_error=True,
        )
    return _status_reply(execution)


async def cancel_reply(store: BackgroundExecutions, caller: Owner, execution_id: str) -> types.CallToolResult:
    """Cancel `caller`'s background execution; its status once it stopped (or a moment passed)."""
    await store.cancel_anywhere(caller, execution_id)
    return _status_reply(await store.wait_for(caller, execution_id, CANCEL_WAIT_SECONDS))
