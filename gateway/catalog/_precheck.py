"""A snippet's literal tool calls checked against the catalog before it runs.

A snippet that creates something and then calls a second tool with a wrong keyword would have made
its first change by the time it fails. So the guest finds the calls written out in full
(`guest/_precheck.py`: the untrusted snippet is parsed inside the sandbox, under fuel) and sends
them here as JSON records; each is judged by the very code the call meets at run time, and a
finding carries the message that call would raise there, so that the whole run is refused first.

What cannot be seen before the run (values not written as literals, `*` and `**` splats) is taken
to be valid: a finding is a mistake the call will certainly make, worded as the run would word it
whenever the rest of the call is right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from gateway.catalog._arguments import argument_refusal
from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._unknown import unknown_tool_message
from gateway.children import ChildState
from guest._precheck import (
    MAX_CALLS,
    MAX_KEYWORDS,
    MAX_NAME_CHARS,
    is_tool_name,
    positional_arguments_message,
)

__all__ = ["MAX_FINDINGS", "Finding", "precheck_calls"]

MAX_FINDINGS = 10
"""Findings reported, at most (the first by line): enough to fix a snippet in one go, and each
unknown name costs a did-you-mean search of the catalog."""

AccessRefusal = Callable[[CatalogEntry], str | None]
"""The refusal the run-time access step (policy) gives a resolved tool, or None if it may be called."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A mistake a snippet's call will certainly make: its line and the message the call would raise."""

    line: int
    message: str


_Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]


class _LiteralCall(BaseModel):
    """One call as the guest reports it: untrusted, so strictly shaped and bounded."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    line: int = Field(ge=1)
    tool: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    positional: int = Field(ge=0)
    star_args: bool
    keywords: list[_Name] = Field(max_length=MAX_KEYWORDS)
    star_kwargs: bool
    literals: dict[_Name, JsonValue] = Field(max_length=MAX_KEYWORDS)


_records = TypeAdapter(Annotated[list[_LiteralCall], Field(max_length=MAX_CALLS)])


def _read_records(calls: object) -> list[_LiteralCall]:
    try:
        return _records.validate_python(calls)
    except ValidationError as exc:
        # The first problem, where it is, never the value (it is the snippet's own text).
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(map(str, first["loc"])) or "(records)"
        raise ValueError(f"the snippet's tool calls could not be read: {where}: {first['msg']}") from None


def precheck_calls(catalog: Catalog, calls: object, *, access: AccessRefusal | None = None) -> list[Finding]:
    """Findings for the guest's literal call records (decoded JSON), by line; ValueError if malformed.

    `catalog` is the one the run will use (hidden tools already filtered out, so they stay unknown).
    `access`, given, is the policy's refusal of a resolved tool. A call the policy refuses is left
    to run time, unjudged: a refusal is the team's decision, not the snippet's mistake (a snippet
    may be written to catch it and go on), and at run time it comes before the arguments are checked.
    """
    findings: list[Finding] = []
    unknown: dict[str, str] = {}  # one did-you-mean search per distinct name
    for call in sorted(_read_records(calls), key=lambda record: record.line):
        if len(findings) >= MAX_FINDINGS:
            break
        message = _judge(catalog, call, unknown, access)
        if message is not None:
            findings.append(Finding(call.line, message))
    return findings


def _judge(
    catalog: Catalog, call: _LiteralCall, unknown: dict[str, str], access: AccessRefusal | None
) -> str | None:
    """The first refusal `call` meets at run time, in the run's order; None if none is certain."""
    if not is_tool_name(call.tool):
        return None  # call_tool refuses such a name itself; the guest never reports one
    if call.positional:
        return positional_arguments_message(call.tool)  # the guest's check, before any host call
    entry = catalog.get(call.tool)
    server = catalog.server(entry.server_id if entry else call.tool.partition(".")[0])
    if not _ready(server):
        return None
    if entry is None:
        if call.tool not in unknown:
            unknown[call.tool] = unknown_tool_message(catalog, call.tool)
        return unknown[call.tool]
    if access is not None and access(entry) is not None:
        return None
    seen: dict[str, Any] = {k: v for k, v in call.literals.items() if k in call.keywords}
    unseen = [k for k in call.keywords if k not in seen]
    return argument_refusal(entry, seen, unseen, all_keywords=not call.star_kwargs)


def _ready(server: CatalogServer | None) -> bool:
    # Only a READY server's tools are judged. An idle lazy server is started by its first call and
    # lists its tools only then; a connecting or reconnecting one may list others by the time the
    # call runs. Those calls are left to the run-time checks. A name no server owns is judged: the
    # run resolves it in this same catalog.
    return server is None or server.state is ChildState.READY
