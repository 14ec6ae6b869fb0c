"""The host side of the sandbox's one import: clock, bounded sleep and tool calls.

Runs on the execution's worker thread. A tool call reaches the async tool caller on the event
loop (`_hop.call_on_loop`, else `anyio.from_thread.run`), bounded by the per-call timeout and by
what remains of the execution's wall budget (wasm epochs never interrupt time spent in here). A
limit ends the execution: the error is recorded on the `ExecutionState` and a trap unwinds the guest, so
the snippet cannot catch it. Every other refusal is a catchable `ToolError` in the snippet.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import anyio
import anyio.from_thread
import wasmtime
from wasmtime.component import Variant

from gateway.errors import (
    ApprovalRequired,
    ExecutionFailed,
    GuestCrashed,
    ShownTooLarge,
    ShownTooMany,
    ToolCallError,
    ToolCallLimitExceeded,
    ToolPayloadTooLarge,
    WallTimeExceeded,
)
from gateway.sandbox._blobs import MIME_TYPE, checked_blobs
from gateway.sandbox._hop import call_on_loop
from gateway.sandbox._journal import HostJournal
from gateway.sandbox._parallel import CallInFlight, CallsInFlight
from gateway.sandbox._services import (
    MAX_DOCS_ARGS_BYTES,
    MAX_DOCS_QUERIES,
    MAX_URI_CHARS,
    HostServices,
    cancelled_error,
    serves_catalog,
)
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ShownItem, ToolCallRecord
from gateway.shared import MAX_JSON_DEPTH, ShareWaitTimedOut, nesting_depth
from guest._blob import BLOB_MARKER

__all__ = [
    "ExecutionState",
    "bound_to_thread",
    "host_call",
]

log = logging.getLogger("gateway.sandbox")

DOCS_SERVICES = {
    "@search": "search()",
    "@docs": "help() and dir() on tools",
    "@precheck": "the check of the snippet's tool calls before it runs",
}
"""The services that answer from the catalog, and what in the snippet reaches each (for its errors)."""
MAX_PRECHECK_ARGS_BYTES = 1 << 20
"""The guest reports at most about 64K characters of a snippet's literal calls; escaped as JSON,
they can grow several times over."""

PARALLEL_SERVICES = ("@start", "@wait", "@cancel")
"""Tool calls the guest's event loop runs side by side: start one, wait for some, cancel some."""
MAX_WAIT_IDS = 10_000

MAX_NAME_CHARS = 256
MAX_ERROR_CHARS = 4_000
"""A refusal's message, at most, as the snippet's ToolError gets it: a child failing at length, or a
validator quoting a huge argument back, must not flood the snippet (or the model reading it)."""


class _Refused(Exception):
    """A refusal the snippet can catch: `error` is the class it raises there (translated by name once,
    at the boundary, `_guest_error`)."""

    def __init__(self, error: type[ToolCallError] | type[ValueError], message: str) -> None:
        super().__init__(_cut(_indented(message)))
        self.error = error


def _indented(message: str) -> str:
    """A message with every line after its first indented: a child's error text (which it may write
    to look like a `[stderr]` marker, a limit's error or a failed call's line) never starts a line of
    the result the model reads where the gateway's own lines start."""
    if message.isprintable():  # no line break of any kind (newline, \r, U+2028...): nothing to do
        return message
    first, *rest = message.splitlines()
    return "\n".join([first, *(line if line[:1] in (" ", "\t") else "  " + line for line in rest)])


@dataclass
class ExecutionState:
    """Per-execution state the host function reads and writes."""

    limits: SandboxLimits
    timeout: float
    services: HostServices | None  # None: nothing outside the sandbox serves this run
    journal: HostJournal | None = None  # records the host's answers (or replays them, resuming)
    in_flight: CallsInFlight | None = None  # set while the run's task group is open on the event loop
    loop: asyncio.AbstractEventLoop | None = None  # the run's asyncio loop: the cheap hop back to it
    docs_queries: int = 0
    prechecked: bool = False
    started: float = field(default_factory=time.monotonic)
    tool_calls: list[ToolCallRecord] = field(default_factory=list[ToolCallRecord])
    shown: list[ShownItem] = field(default_factory=list[ShownItem])
    ended_by: ExecutionFailed | None = None
    cancelled: bool = False
    interrupt: Callable[[], None] | None = None  # set by the slot running it: stops the wasm
    _wait_scope: anyio.CancelScope | None = None  # the host wait (tool call, sleep) in progress

    def restart_clock(self) -> None:
        self.started = time.monotonic()

    def cancel(self) -> None:
        """Stop this execution: interrupt its wasm and abort a host wait. Call on the event loop."""
        self.cancelled = True
        if self.interrupt is not None:
            self.interrupt()
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    async def wait(self, start: Callable[[], Awaitable[Any]], timeout: float | None) -> Any:
        # Runs on the event loop, so `cancel` (also on the loop) can reach this scope; a cancel that ran
        # between the worker's check and this task's start is seen here.
        if self.cancelled:
            raise cancelled_error()
        # One scope for both ends (a nested `fail_after` costs a second scope on every call): the
        # deadline, or `cancel`, which marks the execution cancelled before it cancels this scope.
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        with anyio.CancelScope(deadline=deadline) as scope:
            self._wait_scope = scope
            try:
                return await start()
            finally:
                self._wait_scope = None
        if self.cancelled:
            raise cancelled_error()
        raise TimeoutError

    def remaining(self) -> float:
        return self.timeout - (time.monotonic() - self.started)


def _wait_from_worker(
    execution: ExecutionState,
    start: Callable[[], Awaitable[Any]],
    timeout: float | None,
    fallback: Callable[[], Any] | None = None,
) -> Any:
    if execution.cancelled:
        raise cancelled_error()
    if execution.loop is not None:
        return call_on_loop(execution.loop, lambda: execution.wait(start, timeout))
    try:
        return anyio.from_thread.run(execution.wait, start, timeout)
    except anyio.NoEventLoopError:
        # Outside an anyio worker thread (a synchronous embedding): only waits can do without the loop.
        if fallback is None:
            raise
        return fallback()


def _on_loop(execution: ExecutionState, function: Callable[..., Any], *args: Any) -> Any:
    """Call `function(*args)` on the event loop's thread, from the worker, and return its value."""
    if execution.loop is None:
        return anyio.from_thread.run_sync(function, *args)

    async def call() -> Any:
        return function(*args)

    return call_on_loop(execution.loop, call)


def _budget_error(execution: ExecutionState, what: str) -> WallTimeExceeded:
    return WallTimeExceeded(
        f"{what} would outlast the wall-clock budget of {execution.timeout:g} s "
        f"({max(execution.remaining(), 0):.2f} s left; sandbox.timeout_seconds): do less per execution"
    )


def _sleep_seconds(execution: ExecutionState, payload: Any) -> dict[str, Any]:
    raw: object = payload.get("seconds") if isinstance(payload, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    try:
        seconds = float(raw) if isinstance(raw, int | float) else math.nan  # a huge int overflows
    except OverflowError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise _Refused(ValueError, "time.sleep() takes a finite, non-negative number of seconds")
    if seconds >= execution.remaining():
        raise _budget_error(execution, f"time.sleep({seconds:g})")
    _wait_from_worker(execution, lambda: anyio.sleep(seconds), None, fallback=lambda: time.sleep(seconds))
    return {}


def _show(execution: ExecutionState, args_json: str) -> str:
    """`@show`: keep an image, audio clip or file for the client, within the caps."""
    limits = execution.limits
    if len(execution.shown) >= limits.max_shown_items:
        raise ShownTooMany(
            f"the snippet showed more than {limits.max_shown_items} items (sandbox.max_shown_items): "
            "show fewer, or combine them (one image with several panels, say)"
        )
    item = _shown_item(_parse_json(args_json, "arguments to show()"), len(execution.shown) + 1)
    total = item.size + sum(shown.size for shown in execution.shown)
    if total > limits.max_shown_bytes:
        raise ShownTooLarge(
            f"what the snippet showed would be {total:,} bytes, over the {limits.max_shown_bytes:,}-"
            "byte cap (sandbox.max_shown_bytes): show smaller images (fewer pixels, JPEG), or fewer"
        )
    execution.shown.append(item)
    return "{}"


def _read_docs(execution: ExecutionState, service: str, args_json: str) -> str:
    services = execution.services
    if not serves_catalog(services) and service == "@precheck":
        return '{"findings":[]}'  # no catalog to check against: every call is checked as it runs
    if services is None or not serves_catalog(services):
        raise _Refused(ToolCallError, "no catalog serves this sandbox, so there are no tools to look up")
    if service == "@precheck":  # the guest's own, before the snippet runs: once, and not counted
        if execution.prechecked:
            raise _Refused(ToolCallError, "the snippet's tool calls are checked once, before it runs")
        execution.prechecked = True
    elif execution.docs_queries >= MAX_DOCS_QUERIES:
        raise _Refused(
            ToolCallError,
            f"search(), help() and dir() on tools are limited to {MAX_DOCS_QUERIES} per execution: "
            "look tools up once and keep what you need in a variable",
        )
    else:
        execution.docs_queries += 1
    size = len(args_json.encode())
    cap = MAX_PRECHECK_ARGS_BYTES if service == "@precheck" else MAX_DOCS_ARGS_BYTES
    if size > cap:
        raise _Refused(
            ToolCallError,
            f"the question to {DOCS_SERVICES[service]} is {size:,} bytes, over the "
            f"{cap:,}-byte cap: ask with a few words",
        )
    payload = _parse_json(args_json, f"arguments to {DOCS_SERVICES[service]}")
    if not isinstance(payload, dict):
        raise _Refused(ToolCallError, f"arguments to {DOCS_SERVICES[service]} must be a JSON object")
    try:
        answer = services.read_docs(service, cast("dict[str, Any]", payload))
    except ValueError as exc:
        raise _Refused(ToolCallError, str(exc)) from None
    return json.dumps(answer, ensure_ascii=False)


def _call_tool(execution: ExecutionState, name: str, args_json: str) -> str:
    """Make one call and wait for it: the guest's blocking `tools.server.tool(...)`."""
    arguments = _parse_arguments(execution, name, args_json, len(args_json.encode()))
    services = execution.services
    return _make_call(
        execution, name, None if services is None else partial(services.call_tool, name, arguments)
    )


def _read_resources(execution: ExecutionState, args_json: str) -> str:
    """`@resources`: list a server's resources, or read one, counted and capped like a tool call."""
    request = _resource_request(_parse_json(args_json, "arguments to resources"))
    what = f"{request['server']}:{request.get('uri') or 'resources/list'}"[:MAX_NAME_CHARS]
    services = execution.services
    start = None
    if services is not None and serves_catalog(services):
        start = partial(services.read_resources, request)
    return _make_call(execution, what, start)


def _make_call(execution: ExecutionState, name: str, start: Callable[[], Awaitable[Any]] | None) -> str:
    """One call the guest waits for: counted, bounded by its timeout, its outcome settled.
    `start` is None when nothing serves such calls here (refused once the call limit is checked)."""
    record, timeout = _new_call(execution, name, served=start is not None)
    assert start is not None  # _new_call refused otherwise
    started = time.monotonic()
    try:
        result = _wait_from_worker(execution, start, timeout)
    except (TimeoutError, ToolCallError) as exc:
        return _settle(execution, name, record, timeout, error=exc)
    finally:
        record.ms = round((time.monotonic() - started) * 1000, 3)
    return _settle(execution, name, record, timeout, value=result)


def _start_call(execution: ExecutionState, args_json: str) -> str:
    """`@start`: admit a call the guest awaits, start it on the event loop, answer its id."""
    payload = _parse_json(args_json, "arguments to a tool call")
    name: object = payload.get("name") if isinstance(payload, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(name, str):
        raise _Refused(ToolCallError, "a started tool call needs a name")
    _check_tool_name(name)
    raw = cast("dict[str, Any]", payload).get("arguments")
    arguments = _parse_arguments(execution, name, raw, len(args_json.encode()))
    record, timeout = _new_call(execution, name, served=execution.services is not None)
    if execution.in_flight is None:
        raise _Refused(ToolCallError, f"{name} cannot run side by side here: no event loop serves this run")
    call = CallInFlight(len(execution.tool_calls) - 1, name, record, timeout)
    try:
        _wait_from_worker(execution, lambda: _admit_and_start(execution, call, arguments), timeout)
    except (TimeoutError, ToolCallError) as exc:
        return _settle(execution, name, record, timeout, error=exc)
    except ApprovalRequired:
        if execution.journal is not None:
            _keep_in_flight_for_resume(execution)
        raise
    return json.dumps({"id": call.id})


async def _admit_and_start(execution: ExecutionState, call: CallInFlight, arguments: dict[str, Any]) -> None:
    in_flight, services = execution.in_flight, execution.services
    assert in_flight is not None
    assert services is not None
    in_flight.start(call, await services.admit(call.name, arguments))


def _wait_calls(execution: ExecutionState, args_json: str) -> str:
    """`@wait`: the started calls among `ids` that finished, waiting up to `timeout` seconds."""
    payload = _parse_json(args_json, "arguments to a wait")
    ids, timeout = _wait_request(payload)
    in_flight = execution.in_flight
    if in_flight is None:
        raise _Refused(ToolCallError, "there are no tool calls in flight to wait for")
    settled = execution.journal.take_settled(ids) if execution.journal is not None else {}
    if settled:
        return _done_answer(settled)
    remaining = execution.remaining()
    running = [call_id for call_id in ids if call_id in in_flight]
    if not running and timeout is None:
        raise _Refused(ToolCallError, "every task waits and no tool call is in flight: nothing can wake them")
    if not running and timeout is not None and timeout >= remaining:
        raise _budget_error(execution, f"waiting {timeout:g} s for a timer (asyncio.sleep, a timeout)")
    bound = remaining if timeout is None else min(timeout, remaining)
    done = _wait_from_worker(execution, lambda: in_flight.wait(running, bound), None)
    if not done and (timeout is None or timeout >= remaining):
        raise _budget_error(execution, "waiting for tool calls")
    return _done_answer({call.id: _settled_item(execution, call) for call in done})


def _cancel_calls(execution: ExecutionState, args_json: str) -> str:
    """`@cancel`: stop calls whose tasks the snippet cancelled."""
    ids, _ = _wait_request(_parse_json(args_json, "arguments to a cancel"))
    in_flight = execution.in_flight
    if in_flight is not None:
        _on_loop(execution, in_flight.cancel, ids)
    return "{}"


def _keep_in_flight_for_resume(execution: ExecutionState) -> None:
    """A run pausing for approval lets the calls it started finish, and keeps their answers: the
    run that resumes it receives them without calling the children again."""
    in_flight, journal = execution.in_flight, execution.journal
    assert in_flight is not None
    assert journal is not None
    for call in _wait_from_worker(execution, in_flight.wait_all, None):
        journal.settle(call.id, _settled_item(execution, call))


def _settled_item(execution: ExecutionState, call: CallInFlight) -> str:
    """One finished call as the guest receives it: `{"ok": true, "value": ...}` or its error."""
    try:
        encoded = _settle(execution, call.name, call.record, call.timeout, value=call.value, error=call.error)
    except _Refused as refused:
        return json.dumps({"ok": False, "error": _guest_error(refused)})
    return f'{{"ok":true,"value":{encoded}}}'


def _parse_arguments(execution: ExecutionState, name: str, raw: object, size: int) -> dict[str, Any]:
    """A call's arguments: `raw` is their JSON text (a blocking call, `size` its bytes), or their
    value already parsed from `@start`'s payload (`size` counts the payload, so measure it alone)."""
    cap = execution.limits.max_tool_args_bytes
    if size > cap and not isinstance(raw, str):
        size = len(_encode_for_guest(raw).encode())
    if size > cap:
        raise ToolPayloadTooLarge(
            f"arguments to {name} are {size} bytes, over the {cap}-byte cap (sandbox.max_tool_args_bytes)"
        )
    arguments = _parse_json(raw, f"arguments to {name}") if isinstance(raw, str) else raw
    if not isinstance(arguments, dict):
        raise _Refused(
            ToolCallError, f"arguments to {name} must be a JSON object, got {type(arguments).__name__}"
        )
    return cast("dict[str, Any]", arguments)


def _new_call(execution: ExecutionState, name: str, *, served: bool) -> tuple[ToolCallRecord, float]:
    """The checks every call passes before it is counted, then its record and its timeout.
    `served`: whether anything here answers this kind of call."""
    limits = execution.limits
    if len(execution.tool_calls) >= limits.max_tool_calls:
        raise ToolCallLimitExceeded(
            f"tool call limit reached: {limits.max_tool_calls} calls per execution "
            "(sandbox.max_tool_calls); "
            "batch the work or split it across executions"
        )
    if not served:
        raise _Refused(
            ToolCallError,
            f"no child servers serve this sandbox, so {name} cannot be called "
            "(codemode-gateway exec has children only from --config or $CODEMODE_CONFIG, or after --: "
            "exec -c CODE -- time uvx mcp-server-time)",
        )
    remaining = execution.remaining()
    if remaining <= 0:
        raise _budget_error(execution, f"calling {name}")
    record = ToolCallRecord(tool=name, ms=0.0, ok=False)
    execution.tool_calls.append(record)
    return record, min(limits.tool_call_timeout_seconds, remaining)


def _settle(
    execution: ExecutionState,
    name: str,
    record: ToolCallRecord,
    timeout: float,
    *,
    value: Any = None,
    error: BaseException | None = None,
) -> str:
    """A call's outcome as the guest gets it: its value as JSON, a refusal, or the end of the run."""
    limits = execution.limits
    if isinstance(error, TimeoutError):
        record.error = "timeout"
        if timeout < limits.tool_call_timeout_seconds:
            raise _budget_error(execution, f"waiting for {name}") from None
        message = f"{name} timed out after {timeout:g} s (sandbox.tool_call_timeout_seconds)"
        if isinstance(error, ShareWaitTimedOut):  # it never reached the child: say which limit held it
            message = f"{message} {error}"
        record.message = _summary_line(message)
        raise _Refused(ToolCallError, message) from None
    if isinstance(error, ToolCallError):
        record.error, record.message = error.kind, _summary_line(str(error))
        raise _Refused(type(error), str(error)) from None
    if error is not None:
        raise error
    try:
        encoded = _encode_for_guest(value)
        if BLOB_MARKER in encoded:  # rare: a blob, or a child's JSON holding the marker
            encoded = _encode_for_guest(checked_blobs(value))
    except (TypeError, ValueError, RecursionError) as exc:
        record.error = "bad result"
        raise _Refused(
            ToolCallError, f"{name} returned a value that is not JSON the sandbox can take: {exc}"
        ) from None
    size = len(encoded.encode())
    if size > limits.max_tool_result_bytes:
        record.error = "result too large"
        raise ToolPayloadTooLarge(
            f"result of {name} is {size} bytes, over the {limits.max_tool_result_bytes}-byte cap "
            "(sandbox.max_tool_result_bytes); ask the tool for less (filters, pagination)"
        )
    record.ok = True
    return encoded


_RECORDED_MESSAGE_CHARS = 200


def _summary_line(message: str) -> str:
    """A failed call's message as its record keeps it: one line, its start only."""
    line = " ".join(message.split())
    if len(line) <= _RECORDED_MESSAGE_CHARS:
        return line
    return line[: _RECORDED_MESSAGE_CHARS - 3] + "..."


_SHOWN_KINDS = {"image": "image/", "audio": "audio/", "resource": ""}


def _shown_item(payload: Any, number: int) -> ShownItem:
    """What the guest's show() sent, checked: a kind, a MIME type that fits it, base64 bytes."""
    fields = cast("dict[str, Any]", payload) if isinstance(payload, dict) else {}
    kind, mime_type, data, uri = (fields.get(key) for key in ("kind", "mime_type", "data", "uri"))
    if kind not in _SHOWN_KINDS or not isinstance(data, str):
        raise _Refused(ValueError, "show() takes Blob objects (images, audio, files)")
    if not isinstance(mime_type, str) or not MIME_TYPE.fullmatch(mime_type.lower()):
        raise _Refused(
            ValueError, f"show() needs the Blob's MIME type, such as 'image/png'; got {mime_type!r}"
        )
    if not mime_type.lower().startswith(_SHOWN_KINDS[kind]):
        raise _Refused(ValueError, f"a Blob of type {mime_type!r} cannot be shown as {kind}")
    try:
        size = len(base64.b64decode(data, validate=True))
    except binascii.Error:
        raise _Refused(ValueError, "show(): the Blob's data is not base64") from None
    if uri is not None and (not isinstance(uri, str) or len(uri) > MAX_URI_CHARS):
        raise _Refused(ValueError, f"show(): a Blob's uri is text of at most {MAX_URI_CHARS:,} characters")
    if kind == "resource" and uri is None:
        uri = f"codemode://shown/{number}"  # an embedded resource needs one; the client only shows it
    return ShownItem(kind=kind, mime_type=mime_type, size=size, uri=uri, data=data)


def _resource_request(payload: Any) -> dict[str, Any]:
    """`{"server", "op": "list"}` or `{"server", "op": "read", "uri"}`, checked."""
    fields = cast("dict[str, Any]", payload) if isinstance(payload, dict) else {}
    server, op, uri = fields.get("server"), fields.get("op"), fields.get("uri")
    if not isinstance(server, str) or not 0 < len(server) <= MAX_NAME_CHARS:
        raise _Refused(ToolCallError, "resources.<server>: a server name, as search_docs lists it")
    if op == "list":
        return {"server": server, "op": op}
    if op == "read" and isinstance(uri, str) and 0 < len(uri) <= MAX_URI_CHARS:
        return {"server": server, "op": op, "uri": uri}
    raise _Refused(
        ToolCallError,
        f"resources.{server[:80]}.read(uri) takes the resource's uri, text of at most {MAX_URI_CHARS:,} "
        "characters, as list() shows it",
    )


def _check_tool_name(name: str) -> None:
    if name.startswith("@"):
        raise _Refused(ToolCallError, f"unknown host service {name[:MAX_NAME_CHARS]!r}")
    if len(name) > MAX_NAME_CHARS:
        raise _Refused(
            ToolCallError, f"tool name is {len(name)} characters, over the {MAX_NAME_CHARS}-character cap"
        )


def _wait_request(payload: Any) -> tuple[list[int], float | None]:
    """The ids (and timeout) of a wait or cancel, checked: the guest's loop is the snippet's code too."""
    if not isinstance(payload, dict):
        raise _Refused(ToolCallError, 'a wait names the calls it waits for: {"ids": [...]}')
    fields = cast("dict[str, Any]", payload)
    ids: object = fields.get("ids")
    if not isinstance(ids, list) or len(cast("list[Any]", ids)) > MAX_WAIT_IDS:
        raise _Refused(ToolCallError, f"a wait takes a list of at most {MAX_WAIT_IDS:,} call ids")
    checked = [
        item for item in cast("list[Any]", ids) if isinstance(item, int) and not isinstance(item, bool)
    ]
    if len(checked) != len(cast("list[Any]", ids)):
        raise _Refused(ToolCallError, "call ids are integers")
    timeout: object = fields.get("timeout")
    if timeout is None:
        return checked, None
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 <= timeout < math.inf:
        raise _Refused(ToolCallError, "a wait's timeout is a finite, non-negative number of seconds")
    return checked, float(timeout)


def _done_answer(items: dict[int, str]) -> str:
    """`{"done": [{"id": n, "ok": ..., ...}, ...]}`, built around results already encoded as JSON."""
    return (
        '{"done":['
        + ",".join(f'{{"id":{call_id},{item[1:]}' for call_id, item in sorted(items.items()))
        + "]}"
    )


def _cut(message: str) -> str:
    if len(message) <= MAX_ERROR_CHARS:
        return message
    half = MAX_ERROR_CHARS // 2
    return f"{message[:half]} [... {len(message) - 2 * half:,} characters cut ...] {message[-half:]}"


_current = threading.local()


@contextmanager
def bound_to_thread(execution: ExecutionState) -> Generator[ExecutionState]:
    """Bind an ExecutionState to the current worker thread for the host function to find."""
    _current.execution = execution
    try:
        yield execution
    finally:
        _current.execution = None


def _error(kind: str, message: str) -> Variant:
    return Variant("err", json.dumps({"type": kind, "message": message}))


def _guest_error(refused: _Refused) -> dict[str, str]:
    """A refusal as the guest raises it: its class by name (`ToolError` for ToolCallError itself)."""
    error = refused.error
    kind = "ToolError" if error is ToolCallError else error.__name__
    return {"type": kind, "message": str(refused)}


def _clock(execution: ExecutionState, _args_json: str) -> str:
    journal = execution.journal
    clock = journal.clock() if journal else {"time_ns": time.time_ns(), "monotonic_ns": time.monotonic_ns()}
    return json.dumps(clock)


def _sleep(execution: ExecutionState, args_json: str) -> str:
    return json.dumps(_sleep_seconds(execution, _parse_json(args_json, "host service arguments")))


def _search(execution: ExecutionState, args_json: str) -> str:
    return _read_docs(execution, "@search", args_json)


def _describe(execution: ExecutionState, args_json: str) -> str:
    return _read_docs(execution, "@docs", args_json)


def _precheck(execution: ExecutionState, args_json: str) -> str:
    return _read_docs(execution, "@precheck", args_json)


HostService = Callable[[ExecutionState, str], str]
"""One host service: the execution's state and the guest's JSON arguments in, JSON text out."""

HOST_SERVICES: dict[str, HostService] = {
    "@clock": _clock,
    "@sleep": _sleep,
    "@search": _search,
    "@docs": _describe,
    "@precheck": _precheck,
    "@show": _show,
    "@resources": _read_resources,
    "@start": _start_call,
    "@wait": _wait_calls,
    "@cancel": _cancel_calls,
}
"""The host's services by the name the guest calls them with; any other name is a tool's."""


def _dispatch(execution: ExecutionState, name: str, args_json: str) -> str:
    service = HOST_SERVICES.get(name)
    if service is not None:
        _check_service_size(execution, name, args_json)
        return service(execution, args_json)
    _check_tool_name(name)
    return _call_tool(execution, name, args_json)


MAX_SERVICE_ARGS_BYTES = 1 << 20
"""What the guest sends a sleep, a wait or cancel (10,000 call ids), a resource request or the clock,
at most: far past what the guest's own code sends, and checked before anything is parsed."""
_CALL_ENVELOPE_BYTES = 4_096  # `{"name": ..., "arguments": ...}` around a started call's arguments
_SHOW_ENVELOPE_BYTES = 12 * MAX_URI_CHARS + 1_024  # its kind, MIME type and uri, escaped (12 bytes a char)
# The name of a started call, read from the head of its JSON without parsing the rest (the guest
# writes it first); only for the message of a call refused for its size.
_STARTED_NAME = re.compile(r'\{"name": ?("(?:[^"\\]|\\.){1,3072}")')


def _services_cap(limits: SandboxLimits, service: str) -> int | None:
    """The most JSON text `service` parses; None for those that check their own before parsing."""
    if service == "@start":
        return limits.max_tool_args_bytes + _CALL_ENVELOPE_BYTES
    if service == "@show":
        return 4 * math.ceil(limits.max_shown_bytes / 3) + _SHOW_ENVELOPE_BYTES  # its bytes as base64
    return None if service in DOCS_SERVICES else MAX_SERVICE_ARGS_BYTES


def _check_service_size(execution: ExecutionState, service: str, args_json: str) -> None:
    """Refuse a host service's arguments past its cap before they are parsed: parsing holds the
    interpreter (every other execution and the event loop wait) and memory several times the text."""
    limits = execution.limits
    cap = _services_cap(limits, service)
    if cap is None or len(args_json) <= cap // 4:  # at most 4 UTF-8 bytes a character
        return
    size = len(args_json.encode())
    if size <= cap:
        return
    if service == "@start":
        head = _STARTED_NAME.match(args_json)
        name = _started_name(head.group(1)) if head else "a tool call"
        raise ToolPayloadTooLarge(
            f"arguments to {name} are over the {limits.max_tool_args_bytes}-byte cap "
            f"(sandbox.max_tool_args_bytes): the call is {size:,} bytes of JSON"
        )
    if service == "@show":
        raise ShownTooLarge(
            f"a shown item is {size:,} bytes as JSON, more than its bytes may be under the "
            f"{limits.max_shown_bytes:,}-byte cap (sandbox.max_shown_bytes): show smaller images "
            "(fewer pixels, JPEG), or fewer"
        )
    raise _Refused(
        ToolCallError,
        f"the request to the host's {service[1:]} service is {size:,} bytes, over its "
        f"{MAX_SERVICE_ARGS_BYTES:,}-byte cap",
    )


def _started_name(literal: str) -> str:
    try:
        name = json.loads(literal)
    except ValueError:
        return "a tool call"
    return name[:MAX_NAME_CHARS] if isinstance(name, str) else "a tool call"


def _answer(execution: ExecutionState, name: str, args_json: str) -> Variant:
    """The host's answer to one call: from the journal when resuming, else live (and journaled)."""
    if name == "@show":
        # Kept in this run whether it replays or not (a resumed run shows what it showed before the
        # pause again): it touches nothing outside the run, and its answer depends on the run alone.
        return _live_answer(execution, name, args_json)
    journal = execution.journal
    if journal is None:
        return _live_answer(execution, name, args_json)
    replayed = journal.replay(name, args_json)
    if replayed is not None:
        if replayed.record is not None:
            execution.tool_calls.append(replayed.record.model_copy())
        return Variant("ok" if replayed.ok else "err", replayed.payload)
    calls = len(execution.tool_calls)
    answer = _live_answer(execution, name, args_json)
    record = execution.tool_calls[-1] if len(execution.tool_calls) > calls else None
    journal.record(answer.tag == "ok", cast("str", answer.payload), record)
    return answer


def _live_answer(execution: ExecutionState, name: str, args_json: str) -> Variant:
    try:
        return Variant("ok", _dispatch(execution, name, args_json))
    except _Refused as refused:
        return Variant("err", json.dumps(_guest_error(refused)))


def _parse_json(text: str, what: str) -> Any:
    """Parse JSON from the guest; anything malformed or absurdly nested is a refusal, never a crash."""
    try:
        if text.startswith("\ufeff"):  # as `json.loads` refuses it (`_DECODER.decode` would not say why)
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
        depth = nesting_depth(value, finite=True)
    except ValueError as exc:
        raise _Refused(ToolCallError, f"{what} are not valid JSON: {exc}") from None
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    if depth > MAX_JSON_DEPTH:
        # Children, schema validators and the SDK all recurse on nesting; refuse before they do.
        raise _Refused(ToolCallError, f"{what} nest deeper than {MAX_JSON_DEPTH} levels")
    return value


def _not_json(constant: str) -> Any:
    """`json.loads` reads NaN and Infinity, which JSON has not: a child would get null for them."""
    raise ValueError(f"{constant} is not a JSON number")


# Built once: `json.loads`/`json.dumps` with any non-default option build a new decoder or encoder on
# every call, a cost on every tool call's round trip. Same options, same output.
_DECODER = json.JSONDecoder(parse_constant=_not_json)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(allow_nan=False)


def _encode_for_guest(result: Any) -> str:
    """JSON text for the guest; a child's lone surrogates are escaped, since the boundary takes only UTF-8."""
    encoded = _ENCODER.encode(result)
    try:
        encoded.encode()
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(result)
    return encoded


def _unexpected(execution: ExecutionState, name: str, exc: BaseException) -> ExecutionFailed:
    if execution.cancelled or type(exc).__name__ in ("CancelledError", "Cancelled"):
        execution.cancelled = True
        return cancelled_error()
    # A bug on the host side: contained, logged, never shown to the model.
    log.error("host call failed", exc_info=exc, extra={"tool": name[:MAX_NAME_CHARS]})
    shown = name[:MAX_NAME_CHARS]
    return GuestCrashed(
        f"the gateway failed while serving {shown!r}: {type(exc).__name__}; see the gateway log"
    )


def host_call(_store: object, name: str, args_json: str) -> Variant:
    """The `host.call` import: never raises anything but a WasmtimeError (which traps the guest)."""
    execution: ExecutionState | None = getattr(_current, "execution", None)
    if execution is None:  # cannot happen through Sandbox; refuse rather than act without limits
        return _error("ToolError", "no execution is bound to this thread")
    try:
        return _answer(execution, name, args_json)
    except ExecutionFailed as exc:
        # Kept without its traceback: its frames hold this execution and the store, a reference
        # cycle that kept the store, and its room in the engine's pool, until a collection.
        exc.__context__ = None
        execution.ended_by = exc.with_traceback(None)
    except BaseException as exc:
        # Nothing may escape a ctypes callback: wasmtime-py would ignore it and the process crash.
        # The event loop's cancellation of a wait arrives here as its own exception class.
        execution.ended_by = _unexpected(execution, name, exc)
    # A WasmtimeError (not any other exception: wasmtime-py keeps those in a process-wide global,
    # which concurrent executions would race on) traps the guest and unwinds it.
    raise wasmtime.WasmtimeError("codemode: execution ended by the host")
