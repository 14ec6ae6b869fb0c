"""The MCP server the client sees: `search_docs`, `execute_code` and the exposed child tools (stdio
serving here; HTTP in `_http.py`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from functools import lru_cache, partial
from typing import Any

import anyio
from mcp import types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from gateway.auth import Identity, identity_of
from gateway.calls import ApprovalNeeded, Approvals, ExposedTool, Gateway, Inline, InRounds, Progress
from gateway.catalog.docs import SearchRefused
from gateway.config import GatewayConfig
from gateway.errors import ConfigError, GatewayError
from gateway.policy import no_approver
from gateway.policy.elicitation import can_elicit, elicitation_approver
from gateway.reload import ReloadOptions, serve_reloads
from gateway.server._approvals import approval_request, asks_in_rounds, request_state_boundary, resume_of
from gateway.server._arguments import (
    BackgroundExecuteCodeArgs,
    ExecuteCodeArgs,
    SearchDocsArgs,
    bad_arguments,
    execute_code_arguments,
    input_schema,
)
from gateway.server._background import BackgroundExecutions
from gateway.server._metrics import RefusedStates
from gateway.server._refused_config import serve_refused_config
from gateway.server._results import execution_tool_result, max_result_chars
from gateway.server._shared_executions import open_execution_store
from gateway.server._start_gate import HANDSHAKE_HEAD_START_SECONDS, StartGate
from gateway.server._stdio import cancel_on_signals, stdio_files
from gateway.server._tasks import (
    TASKS_EXTENSION,
    background_reply,
    caller_of_request,
    cancel_reply,
    collect_reply,
    install_task_methods,
    start_background,
    task_middleware,
    tasks_capability,
)
from gateway.server._tool_list import ToolListChanges, watch_tool_list
from gateway.shared import PACKAGE_NAME, package_version, redact_logs

__all__ = ["build_server", "serve_stdio"]

log = logging.getLogger("gateway.server")

SERVER_NAME = PACKAGE_NAME

SEARCH_DOCS_DESCRIPTION = (
    "Find the tools of the connected MCP servers. Returns Python signatures such as "
    "`time.get_current_time(*, timezone: str) -> {'datetime': str, ...}`. Call it with an empty query for an "
    "overview of servers and tool names, then search by task. Use execute_code to call the tools; "
    "inside it, search('...') and help(tools.<server>.<tool>) do the same."
)
EXECUTE_CODE_DESCRIPTION = (
    "Run Python in a sandbox (no files, network or processes) and call tools from it as "
    "`tools.<server>.<tool>(**kwargs)` (or `await` them); results are Python values. Combine and filter "
    "results in code and print or end with only what you need: the last expression's value is returned. "
    "A failed call raises ToolError, which you can catch. Each run starts fresh; standard-library "
    "modules such as json, re, datetime, collections and statistics are available."
)
BACKGROUND_SENTENCE = (
    " For long work pass background=true to get an id at once, then call with collect=<id> for the "
    "result (or cancel=<id>)."
)


RESULT_SIZE_HINT = "anthropic/maxResultSizeChars"
"""Where Claude Code reads how large a tool's results may be before it moves them into a file."""


@lru_cache(maxsize=16)
def _tools(
    read_only: bool, destructive: bool, result_chars: int, background: bool = False
) -> tuple[types.Tool, ...]:
    # Built once per variant: generating the two input schemas is too slow to repeat on every tools/list.
    return (
        types.Tool(
            name="search_docs",
            description=SEARCH_DOCS_DESCRIPTION,
            input_schema=input_schema(SearchDocsArgs),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="execute_code",
            description=EXECUTE_CODE_DESCRIPTION + (BACKGROUND_SENTENCE if background else ""),
            input_schema=input_schema(BackgroundExecuteCodeArgs if background else ExecuteCodeArgs),
            # Handshake-era clients with tasks may call it as one (2026-07-28 negotiates per request).
            execution=types.ToolExecution(task_support="optional") if background else None,
            _meta={RESULT_SIZE_HINT: result_chars},
            # What the snippet can reach, so a client's auto-approval rules keep meaning what they say.
            annotations=types.ToolAnnotations(
                read_only_hint=read_only, destructive_hint=destructive, open_world_hint=True
            ),
        ),
    )


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


class _Server(Server[Any]):
    """The lowlevel server, declaring `tools.listChanged` on the handshake era whoever asks: stdio
    passes its options, the streamable HTTP session manager takes the defaults; and `tasks` on the
    handshake era when background executions are served."""

    serves_tasks: bool = False

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        if not self.serves_tasks or protocol_version in MODERN_PROTOCOL_VERSIONS:
            return capabilities
        return capabilities.model_copy(update={"tasks": tasks_capability()})

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def build_server(gateway: Gateway, *, lasting_executions: bool = False) -> Server[Any]:
    """A lowlevel MCP server whose two tools, and the exposed ones, are served by `gateway`.

    While it runs, it tells clients when its tool list changes (`_tool_list.py`). With `lasting_executions`
    (a served process), finished background runs outlive it in a file (`_execution_store.py`); with
    `state`, background runs are shared with the other replicas either way.
    """
    changes = ToolListChanges()
    background = BackgroundExecutions(gateway.config.background)
    serves_background = gateway.config.background.enabled

    def listing() -> list[types.Tool]:
        result_chars = max_result_chars(gateway.config.sandbox)
        tools = _tools(*gateway.execute_code_annotations(), result_chars, serves_background)
        return [*tools, *gateway.exposed().definitions]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await gateway.settled_exposure()  # a client that lists once, at start, sees the exposed tools
        return types.ListToolsResult(tools=listing())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = params.arguments or {}
        if params.name == "search_docs":
            try:
                search = SearchDocsArgs.model_validate(arguments)
            except ValidationError as exc:
                return _text(bad_arguments("search_docs", exc, SearchDocsArgs), is_error=True)
            try:
                text = await gateway.search_docs(
                    search.query, search.server, search.limit, search.detail, identity=caller_identity()
                )
            except SearchRefused as exc:
                return _text(f"search_docs refused: {exc}", is_error=True)
            return _text(text)
        if params.name == "execute_code":
            run = execute_code_arguments(arguments, background=serves_background)
            if isinstance(run, str):
                return _text(run, is_error=True)
            try:
                if isinstance(run, BackgroundExecuteCodeArgs):
                    return await _execute_code_or_background(gateway, background, ctx, params, run)
                return await _execute_code(gateway, ctx, params, run)
            except GatewayError as exc:
                return _text(f"execute_code failed: {exc}", is_error=True)
        exposed = await gateway.exposed_tool(params.name)
        if exposed is not None:
            return await _call_exposed(gateway, ctx, params, exposed)
        listed = ", ".join(["search_docs", "execute_code", *(t.name for t in gateway.exposed().tools)])
        return _text(f"unknown tool {params.name!r}: this server has {listed}", is_error=True)

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncGenerator[dict[str, Any]]:
        async with (
            open_execution_store(gateway.config, gateway.stores.shared, lasting=lasting_executions) as store,
            background.running(store),
            anyio.create_task_group() as task_group,
        ):
            task_group.start_soon(watch_tool_list, gateway, listing, changes)
            try:
                yield {}
            finally:
                changes.listen.close()
                task_group.cancel_scope.cancel()

    server = _Server(
        SERVER_NAME,
        version=package_version(),
        instructions="Use search_docs to find tools, then execute_code to call and combine them in Python.",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=changes.listen,
    )
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, changes.on_initialized
    )
    server.middleware.append(RefusedStates(gateway.telemetry))  # outside the boundary: sees its refusals
    server.middleware.append(request_state_boundary(gateway.config.approvals, SERVER_NAME))
    if serves_background:
        server.serves_tasks = True
        server.extensions[TASKS_EXTENSION] = {}
        install_task_methods(server, background)
        server.middleware.append(task_middleware(gateway, background))
    return server


def initialization_options(server: Server[Any]) -> InitializationOptions:
    """The handshake era's options: the tool list may change (2026-07-28 declares it from `listen`)."""
    return server.create_initialization_options(NotificationOptions(tools_changed=True))


async def _execute_code_or_background(
    gateway: Gateway,
    background: BackgroundExecutions,
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    run: BackgroundExecuteCodeArgs,
) -> types.CallToolResult | types.InputRequiredResult:
    """execute_code with its background arguments (checked to go together): start (answering an id;
    an MCP task is answered by `task_middleware` before this), collect or cancel; without them, a run
    in the foreground."""
    if run.collect is not None:
        return await collect_reply(background, caller_of_request(ctx), run.collect)
    if run.cancel is not None:
        return await cancel_reply(background, caller_of_request(ctx), run.cancel)
    assert run.code is not None  # execute_code_arguments refuses a call with none of the three
    if not run.background:
        return await _execute_code(
            gateway, ctx, params, ExecuteCodeArgs(code=run.code, timeout=run.timeout, details=run.details)
        )
    execution = await start_background(gateway, background, ctx, run.code, run.timeout, details=run.details)
    return background_reply(background, execution)


async def _execute_code(
    gateway: Gateway,
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    run: ExecuteCodeArgs,
) -> types.CallToolResult | types.InputRequiredResult:
    """Run the snippet with approvals asked the way this request's protocol era asks them."""
    client = ctx.session.client_params.client_info if ctx.session.client_params else None
    approvals = _approvals(ctx, params)
    outcome = await gateway.execute_code(
        run.code, run.timeout, approvals, client, _progress(ctx), caller_identity()
    )
    if isinstance(outcome, ApprovalNeeded):
        return approval_request(outcome)
    return execution_tool_result(outcome, details=run.details)


def _approvals(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Approvals:
    """Approvals as this request's protocol era asks them: in rounds (2026-07-28), else inline; a
    client that cannot be asked at all gets the refusal that says so."""
    if asks_in_rounds(ctx) and can_elicit(ctx.session):
        return InRounds(resume_of(params))
    return Inline(no_approver if asks_in_rounds(ctx) else elicitation_approver(ctx.session, ctx.request_id))


async def _call_exposed(
    gateway: Gateway,
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    tool: ExposedTool,
) -> types.CallToolResult | types.InputRequiredResult:
    """Call an exposed tool, its approval asked the way this request's protocol era asks; a refusal
    is a tool error with the pipeline's message."""
    arguments = params.arguments or {}
    client = ctx.session.client_params.client_info if ctx.session.client_params else None
    try:
        outcome = await gateway.call_exposed(
            tool, arguments, _approvals(ctx, params), caller_identity(), client
        )
        if isinstance(outcome, ApprovalNeeded):
            return approval_request(outcome)
        return outcome
    except GatewayError as exc:
        return _text(str(exc), is_error=True)


def caller_identity() -> Identity | None:
    """Who sent the request being served: the identity its bearer token names (HTTP with `auth`)."""
    token = get_access_token()  # set by the SDK's auth middleware for this request, if any
    return None if token is None else identity_of(token)


def _progress(ctx: ServerRequestContext[Any]) -> Progress | None:
    """Progress notifications for this request, if it asked for them: strictly increasing (seconds
    elapsed), after every tool call and every second in between."""
    token = ctx.meta.get("progress_token") if ctx.meta else None
    if token is None:
        return None
    last = 0.0

    async def report(calls: int, elapsed: float) -> None:
        nonlocal last
        last = max(round(elapsed, 3), last + 0.001)
        message = f"{calls} tool call{'s' if calls != 1 else ''}, {elapsed:.1f} s"
        await ctx.session.send_progress_notification(
            token, progress=last, message=message, related_request_id=str(ctx.request_id)
        )

    return report


def warn_of_unidentified_callers(config: GatewayConfig, transport: str) -> None:
    """Say once, at start, that `policy.roles` cannot apply when nobody is identified."""
    if config.policy.roles and config.auth is None:
        log.warning(
            "policy.roles name callers, but nobody is identified here: every caller gets the policy as "
            "written (roles apply over HTTP with an auth section)",
            extra={"transport": transport, "roles": sorted(config.policy.roles)},
        )


async def serve_stdio(
    config: GatewayConfig, reload: ReloadOptions | None = None, *, started: Callable[[], None] | None = None
) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin or SIGTERM/SIGINT arrives; with
    `reload`, reloading the config on SIGHUP and changes to the file (`gateway/reload/`). `started`
    is called once the gateway has started (the CLI tunes the process there).

    The handshake is answered first; then the gateway starts (`_start_gate.py`). A config the
    gateway cannot serve (a malformed lockfile, middleware that does not import) is served as a
    refusal until the client leaves (`_refused_config.py`), then raised."""
    warn_of_unidentified_callers(config, "stdio")
    try:
        gateway = Gateway(config)
    except ConfigError as error:
        await serve_refused_config(error, config.config_file)
        raise
    redact_logs(gateway.redactor)
    server = build_server(gateway, lasting_executions=True)
    start_now = anyio.Event()  # the handshake is answered, work has come, or stdin closed
    stdin_closed = anyio.Event()
    gate = StartGate(start_now=start_now.set)
    server.middleware.insert(0, gate)

    async with anyio.create_task_group() as task_group:
        # Watching first: a signal during startup also stops every child the gateway started.
        await task_group.start(cancel_on_signals, task_group.cancel_scope)
        async with (
            stdio_files() as (stdin, stdout),
            stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream),
            anyio.create_task_group() as serving,
        ):

            async def run() -> None:
                try:
                    await server.run(read_stream, write_stream, initialization_options(server))
                finally:
                    start_now.set()
                    stdin_closed.set()

            serving.start_soon(run)
            with anyio.move_on_after(HANDSHAKE_HEAD_START_SECONDS):
                await start_now.wait()
                await anyio.wait_all_tasks_blocked()  # the answer is on the wire, not only on its way
            async with gateway, anyio.create_task_group() as reloads:
                if started is not None:
                    started()
                gate.open()
                if reload is not None:
                    await reloads.start(serve_reloads, gateway, reload)
                await stdin_closed.wait()
                reloads.cancel_scope.cancel()  # before the gateway stops: no reload races its shutdown
        task_group.cancel_scope.cancel()  # stdin closed: stop watching for signals
    log.info("gateway stopped")


def run_stdio(
    config: GatewayConfig, reload: ReloadOptions | None = None, *, started: Callable[[], None] | None = None
) -> None:
    """Blocking entry point for `codemode-gateway serve`."""
    anyio.run(partial(serve_stdio, config, reload, started=started))
