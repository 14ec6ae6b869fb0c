"""Pass-through tools: the child tools the config's `expose` lists beside search_docs and execute_code.

Some tools a model should call itself rather than from a snippet, such as one returning a
screenshot it must look at. Each exposed tool is listed under a wire name, with the child's
description, schemas and annotations (redacted as the catalog holds them), and each call goes
through the same tool-call pipeline as a snippet's: secrets, access, arguments, constraints, quota,
approval, redaction, audit (`gateway.calls._tool_calls`).

Wire names are `<server>__<tool>`, from the Python names search_docs shows (`screen.take_shot` is
`screen__take_shot`), so they fit `^[a-zA-Z0-9_-]{1,64}$`, which the Anthropic API requires of
tool names. They always hold `__`, which `search_docs` and `execute_code` do not, so they never
collide with those. A name longer than 64 characters, or one two exposed tools would share (server
`a__b` with tool `c`, server `a` with tool `b__c`), is cut to 55 characters and suffixed with `_`
and 8 hex digits of its tool's sha256: still stable across restarts and independent of the order
of `expose`.

On MCP 2026-07-28 an approval is asked in a round: the call answers "input required" with a state
naming the paused call (`PausedToolCall`), and the client's retry admits the same call again with
the user's answer. There is no snippet to replay, so the state holds only what binds the answer to
the call the user was shown, and a nonce that makes it single-use.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import types

from gateway.audit import new_execution_id
from gateway.calls._approvals import Approvals, Inline
from gateway.calls._pipeline import Call, ExecutionStart, PausedCallAnswer
from gateway.calls._resume import ApprovalNeeded, SpentStates
from gateway.calls._tool_calls import ToolCalls, wire_digest
from gateway.catalog import Catalog, CatalogEntry, CatalogServer
from gateway.children import ChildState
from gateway.errors import ApprovalRequired, ResumeRefused, ToolCallError
from gateway.policy import Policy, pause_for_approval
from gateway.shared import ShareWaitTimedOut
from gateway.telemetry import Telemetry

__all__ = [
    "MAX_WIRE_NAME",
    "WIRE_NAME",
    "ExposedCalls",
    "ExposedTool",
    "Exposure",
    "PausedToolCall",
    "Unlisted",
    "expose_tools",
    "wire_names",
]

WIRE_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What clients accept as a tool name (the Anthropic API's rule, the strictest in use)."""
MAX_WIRE_NAME = 64
_SEPARATOR = "__"
_DIGEST_CHARS = 8
_STATE_KIND = "exposed-call"
_STATE_VERSION = 1


@dataclass(frozen=True)
class ExposedTool:
    """A child tool listed to the client directly: its wire name, its catalog entry, its definition."""

    name: str
    entry: CatalogEntry
    tool: types.Tool


@dataclass(frozen=True)
class Unlisted:
    """Why an `expose` entry is not listed; `lasting` when the config must change, not the child's state."""

    reason: str
    lasting: bool


@dataclass(frozen=True)
class Exposure:
    """The exposed tools of one catalog, and why each `expose` entry that is not listed is not."""

    tools: tuple[ExposedTool, ...] = ()
    unlisted: Mapping[str, Unlisted] = field(default_factory=dict[str, Unlisted])

    def get(self, name: str) -> ExposedTool | None:
        """The exposed tool listed as `name`, if any."""
        return next((tool for tool in self.tools if tool.name == name), None)

    @property
    def definitions(self) -> list[types.Tool]:
        """The exposed tools as tools/list shows them, in the order `expose` lists them."""
        return [tool.tool for tool in self.tools]


def expose_tools(
    names: Sequence[str],
    visible: Catalog,
    policy: Policy,
    *,
    everything: Callable[[], Catalog],
    listed: Mapping[str, Sequence[types.Tool]],
) -> Exposure:
    """The tools of `names` that `visible` (the catalog the model sees) holds and the policy allows.

    `everything` builds the catalog before the policy filtered it, to say why a name is missing;
    `listed` is each child's tools as it listed them (by config name), for their annotations.
    """
    chosen: dict[str, CatalogEntry] = {}
    unlisted: dict[str, Unlisted] = {}
    unfiltered: list[Catalog] = []  # built once, and only if some name is missing

    def full() -> Catalog:
        if not unfiltered:
            unfiltered.append(everything())
        return unfiltered[0]

    for name in names:
        entry = visible.get(name)
        if entry is None:
            unlisted[name] = _missing(name, visible, full(), policy)
        elif (rule := policy.denial(entry)) is not None:
            unlisted[name] = Unlisted(f"{entry.qualified} is denied by policy ({rule})", lasting=True)
        elif (sharing := _sharing(name, entry, visible, full)) is not None:
            unlisted[name] = Unlisted(sharing, lasting=True)
        else:
            chosen.setdefault(entry.qualified, entry)  # one tool named twice (two spellings) is listed once
    wire = wire_names(chosen.values())
    tools = tuple(
        ExposedTool(wire[entry.qualified], entry, _definition(wire[entry.qualified], entry, listed))
        for entry in chosen.values()
    )
    return Exposure(tools, unlisted)


def _sharing(name: str, entry: CatalogEntry, visible: Catalog, full: Callable[[], Catalog]) -> str | None:
    """Why `name` may not expose `entry`: it is a Python name that tools of the server share (hidden
    ones too, which the reason leaves unnamed), so the tool it names changes as the server's tool list
    changes; None when it names one tool for good."""
    written = name.strip().removeprefix("tools.").partition(".")[2]
    if written == entry.tool_name != entry.python_name:
        return None  # the child's own name for the tool, which no Python name spells: only that tool
    for group in full().name_collisions(entry.server_id):
        if any(e.tool_name == entry.tool_name for e in group):
            shown = [
                e for e in group if e.tool_name != entry.tool_name and visible.get(e.qualified) is not None
            ]
            others = ", ".join(f"{e.server_id}.{e.tool_name}" for e in shown) or "another tool"
            own = f"{entry.server_id}.{entry.tool_name}"
            instead = "have the server rename one" if own == name else f"expose {own} (the child's own name)"
            return (
                f"{name} is a Python name that {others} shares, so the tool it names changes with the "
                f"server's tool list: {instead}"
            )
    return None


def wire_names(entries: Iterable[CatalogEntry]) -> dict[str, str]:
    """Each entry's wire name by its qualified name: `server__tool`, hashed when too long or shared."""
    plain = {entry.qualified: f"{entry.server_id}{_SEPARATOR}{entry.python_name}" for entry in entries}
    shared = Counter(plain.values())
    names: dict[str, str] = {}
    for qualified, name in plain.items():
        if len(name) > MAX_WIRE_NAME or shared[name] > 1:
            digest = hashlib.sha256(qualified.encode()).hexdigest()[:_DIGEST_CHARS]
            name = f"{name[: MAX_WIRE_NAME - _DIGEST_CHARS - 1]}_{digest}"
        names[qualified] = name
    return names


def _definition(name: str, entry: CatalogEntry, listed: Mapping[str, Sequence[types.Tool]]) -> types.Tool:
    """The child's tool under its wire name: the catalog's (redacted) texts and schemas, its annotations."""
    own = listed.get(entry.server_name, ())
    original = next((tool for tool in own if tool.name == entry.tool_name), None)
    return types.Tool(
        name=name,
        title=entry.title,
        description=entry.description or None,
        input_schema=entry.input_schema,
        output_schema=entry.output_schema,
        annotations=original.annotations if original is not None else None,
    )


def _missing(name: str, visible: Catalog, everything: Catalog, policy: Policy) -> Unlisted:
    """Why `name` is not in the catalog the model sees."""
    server_part, _, tool_part = name.partition(".")
    server = visible.server(server_part) or everything.server(server_part)
    found = everything.get(name)
    if found is not None and not policy.visible(found):
        return Unlisted(f"{found.qualified} is hidden by policy.hidden", lasting=True)
    if server is None:
        known = ", ".join(s.identifier for s in everything.servers) or "none"
        suggestions = everything.suggest_servers(server_part)
        hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else f" (servers: {known})"
        return Unlisted(f"no server {server_part!r}{hint}", lasting=True)
    if server.blocked is not None:
        return Unlisted(f"server {server.identifier!r} is blocked: {server.blocked}", lasting=True)
    if server.state is not ChildState.READY and found is None:
        return Unlisted(_not_up(server), lasting=False)
    if found is not None:  # the policy keeps it, yet the catalog the model sees leaves it out
        return Unlisted(f"{found.qualified} is left out of the tools the model sees", lasting=True)
    suggestions = everything.suggest(name)
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
    return Unlisted(f"server {server.identifier!r} has no tool {tool_part!r}{hint}", lasting=True)


def _not_up(server: CatalogServer) -> str:
    if server.state is ChildState.IDLE:
        return f"server {server.identifier!r} is idle (lazy): its tools are listed once it has started"
    error = f": {server.status.error}" if server.status.error else ""
    return f"server {server.identifier!r} is {server.state}{error}; its tools are listed once it is ready"


@dataclass(frozen=True)
class PausedToolCall:
    """A direct call paused for approval on 2026-07-28, as the state its client carries to the retry.

    The SDK's boundary seals the state and binds it to the call's tool name and arguments; this adds
    the call as the user was shown it (its catalog name and wire-argument digest) and a nonce.
    """

    execution_id: str
    tool: str
    arguments_digest: str
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))

    def dump(self) -> str:
        """The state text."""
        data: dict[str, Any] = {
            "kind": _STATE_KIND,
            "v": _STATE_VERSION,
            "id": self.execution_id,
            "tool": self.tool,
            "args": self.arguments_digest,
            "nonce": self.nonce,
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def load(cls, text: str) -> PausedToolCall:
        """Read a state this gateway wrote for a direct call, or ResumeRefused."""
        try:
            data = json.loads(text)
            if data["kind"] != _STATE_KIND or data["v"] != _STATE_VERSION:
                raise ValueError("not a paused direct call")
            return cls(str(data["id"]), str(data["tool"]), str(data["args"]), str(data["nonce"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ResumeRefused(
                f"the approval state cannot be read by this gateway ({type(exc).__name__}); "
                "call the tool again"
            ) from None


class ExposedCalls:
    """Calls of exposed tools, each an execution of one call through the tool-call pipeline."""

    def __init__(self, tool_calls: ToolCalls, spent_states: SpentStates, telemetry: Telemetry) -> None:
        self._tool_calls = tool_calls
        self._spent_states = spent_states
        self._telemetry = telemetry

    async def call(
        self,
        tool: ExposedTool,
        arguments: dict[str, Any],
        approvals: Approvals,
        start: ExecutionStart,
        timeout: float,
    ) -> types.CallToolResult | ApprovalNeeded:
        """The child's result, redacted; or the refusal. In rounds, a call needing approval answers
        ApprovalNeeded, and the retry with `resume` admits the same call again with the user's answer."""
        if isinstance(approvals, Inline):
            execution = start.execution(new_execution_id(), approvals.approver)
            call = await self._tool_calls.admit(execution, tool.entry.qualified, arguments)
            return await self._complete(tool, call, timeout)
        resume = approvals.resume
        if resume is None:
            execution = start.execution(new_execution_id(), pause_for_approval)
        else:
            paused = PausedToolCall.load(resume.state)
            try:
                await self._spent_states.spend(paused.nonce)
            except ResumeRefused:
                self._telemetry.approval_refused()
                raise ResumeRefused(
                    "this approval was already used: an approval answers one call. Call the tool again "
                    "to be asked again"
                ) from None
            execution = start.execution(paused.execution_id, pause_for_approval)
            execution.answer = PausedCallAnswer(resume.answer, paused.tool, paused.arguments_digest)
        try:
            call = await self._tool_calls.admit(execution, tool.entry.qualified, arguments)
        except ApprovalRequired as pause:
            state = PausedToolCall(
                execution.execution_id, pause.tool, wire_digest(pause.arguments, pause.callee)
            )
            return ApprovalNeeded(pause.tool, pause.arguments, state.dump())
        return await self._complete(tool, call, timeout)

    async def _complete(self, tool: ExposedTool, call: Call, timeout: float) -> types.CallToolResult:
        """The child's answer, bounded as a snippet's call is (`sandbox.tool_call_timeout_seconds`)."""
        try:
            with anyio.fail_after(timeout):
                return await self._tool_calls.complete_raw(call)
        except TimeoutError as exc:
            name = tool.entry.qualified
            message = f"{name} timed out after {timeout:g} s (sandbox.tool_call_timeout_seconds)"
            if isinstance(exc, ShareWaitTimedOut):  # it never reached the child: say which limit held it
                message = f"{message} {exc}"
            raise ToolCallError(message) from None
