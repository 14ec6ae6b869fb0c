"""Resources a snippet reads from child servers: `resources.<server>.list()` and `.read(uri)`.

A resource request is a kind of call (`_pipeline.py`) that skips the steps it does not need;
`ResourceReads.answer` states the order of the steps it takes, numbered as there:

   parse       the URI in its canonical form (`policy.canonical_uri`): what the policy judges and the
               child gets are one string; a URI with no single meaning (a percent-escape of `/`, a
               `..` segment) is refused
0. secrets     a server name or URI holding a value the gateway keeps secret ends the execution
1. resolve     the server in the execution's catalog (unknown: a did-you-mean; blocked by a policy typo: why)
2. access      a hidden resource is unknown; deny and allow refuse a read, naming the rule (the list
               leaves hidden entries out and marks denied ones, as search_docs marks denied tools)
5. quota       each list or read counts one call toward `policy.max_tool_calls`, once 0-2 passed
7. child       the requests, each in one of the child's call slots; a list pages through the child's
               cursors, at most MAX_PAGES pages and MAX_ENTRIES entries of each kind
8. result      the listing, or the contents (text as text, bytes as blob markers), as JSON values;
               contents the policy would not let the snippet read by their own URI are left out
9. redaction   of the answer, and of the text of any error, whatever the step that raised it
10. record     the metric and the span (as a tool call's, with `mcp.method.name` resources/read or
               resources/list), the audit record (`tool_call`, tool `server:uri`, or
               `server:resources/list`) and a progress report, whatever happened

Resources are matched by the policy as `server:uri`, the server by its Python name (`policy/config.py`).
There are no argument checks (the URI is the one argument) and no approvals: `read_only` does not
apply to a read, and a read `approve` would cover is refused (`Policy.resource_denial`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp import types

from gateway.audit import AuditLog
from gateway.calls._pipeline import Call, Execution, Pipeline, ResourceNames, bounded_work
from gateway.catalog import Catalog, CatalogServer, resource_contents_value
from gateway.children import ChildPool
from gateway.errors import ToolCallError
from gateway.policy import NonCanonicalUri, Policy, canonical_uri
from gateway.sandbox import MAX_URI_CHARS
from gateway.shared import Redactor
from gateway.telemetry import Telemetry

__all__ = ["MAX_ENTRIES", "MAX_PAGES", "ResourceReads"]

MAX_PAGES = 20
"""Pages of resources (and of templates) one list asks a child for: a paginator that never ends stops."""
MAX_ENTRIES = 1000
"""Resources (and templates) one list returns; past it the answer says it was cut (`truncated`)."""
_LIST = "resources/list"
"""What a list is recorded as, after the server's name: no URI has this form (it has no scheme)."""

# Converting and redacting more than this runs on a worker thread, as tool results do.
_LOOP_WORK_CHARS = 32_768
_LOOP_WORK_ENTRIES = 200
_SHOWN_URI_CHARS = 200

T = TypeVar("T")


@dataclass
class _Request:
    """One request as the snippet made it, and what the audit log calls it."""

    server: str
    uri: str | None  # None for a list
    name: str
    arguments: dict[str, Any]


class ResourceReads:
    """The resource requests of snippets, over a pool of children, under each execution's policy, redacted and
    audited."""

    def __init__(
        self, pool: ChildPool, redactor: Redactor, audit: AuditLog | None, telemetry: Telemetry | None = None
    ) -> None:
        self._pipeline = Pipeline(pool, redactor, audit, telemetry)
        self._pool = pool
        self._redactor = redactor

    async def answer(self, execution: Execution, payload: dict[str, Any]) -> Any:
        """Answer `{"server": s, "op": "list"}` or `{"server": s, "op": "read", "uri": u}` for the snippet
        of `execution`. A list is `{"resources": [...], "templates": [...]}` (`truncated` says why, when
        cut); a read is `{"uri": u, "contents": [...]}`. Raises ToolCallError, with any secret redacted."""
        # A resumed round's answer belongs to its first call, the paused tool call: never to a later one.
        execution.answer = None
        kind = "resources/list" if payload.get("op") == "list" else "resources/read"
        call = self._pipeline.start(execution, "resources:?", {}, kind)
        failure: BaseException | None = None
        try:
            request = _parse(payload)
            call.name, call.wire = request.name, request.arguments
            # 0: a child could echo a secret back, its place marked
            self._pipeline.refuse_secrets("a resource request", [request.server, request.uri])
            server = _resolve(execution.catalog, request.server)
            call.name = f"{server.identifier}:{request.uri or _LIST}"
            call.resource = ResourceNames(server.name, request.uri or _LIST, call.name)
            if request.uri is None:
                execution.quota.acquire_name(call.name)
                return await self._listing(call, server)
            if not execution.policy.resource_visible(server.identifier, request.uri):
                raise ToolCallError(_unknown_resource(server, request.uri))
            execution.policy.check_resource(server.identifier, request.uri)
            execution.quota.acquire_name(call.name)
            return await self._read(call, server, request.uri)
        except BaseException as exc:
            failure = self._pipeline.redacted(exc)
            raise
        finally:
            await self._pipeline.finish(call, failure)

    async def _listing(self, call: Call, server: CatalogServer) -> dict[str, Any]:
        """Steps 7-9 of a list: every page of resources and of templates, less the hidden ones."""
        policy, holder = call.execution.policy, call.execution.holder
        notes: list[str] = []

        async def resources(cursor: str | None) -> tuple[list[types.Resource], str | None]:
            page = await self._pool.list_resources(server.name, cursor, holder=holder)
            return page.resources, page.next_cursor

        async def templates(cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
            page = await self._pool.list_resource_templates(server.name, cursor, holder=holder)
            return page.resource_templates, page.next_cursor

        def listed(resource: types.Resource) -> bool:
            judged = _judged(resource.uri)  # one with no canonical form could not be read: left out
            return judged is not None and policy.resource_visible(server.identifier, judged)

        def listed_template(template: types.ResourceTemplate) -> bool:
            return policy.resource_visible(server.identifier, template.uri_template)

        found = await self._pipeline.child(call, _pages(resources, listed, "resources", notes))
        found_templates = await self._pipeline.child(
            call, _pages(templates, listed_template, "templates", notes)
        )
        large = len(found) + len(found_templates) > _LOOP_WORK_ENTRIES
        return await bounded_work(large, self._listing_value, policy, server, found, found_templates, notes)

    def _listing_value(
        self,
        policy: Policy,
        server: CatalogServer,
        resources: Sequence[types.Resource],
        templates: Sequence[types.ResourceTemplate],
        notes: list[str],
    ) -> dict[str, Any]:
        value: dict[str, Any] = {
            "resources": [
                _noted(policy, server, _judged(resource.uri) or resource.uri, _resource_entry(resource))
                for resource in resources
            ],
            "templates": [
                _noted(policy, server, template.uri_template, _template_entry(template))
                for template in templates
            ],
        }
        if notes:
            value["truncated"] = "; ".join(notes)
        return self._redactor.redact_json(value)

    async def _read(self, call: Call, server: CatalogServer, uri: str) -> dict[str, Any]:
        """Steps 7-9 of a read: the child's contents as the snippet receives them, redacted."""
        policy = call.execution.policy
        read = self._pool.read_resource(server.name, uri, holder=call.execution.holder)
        result = await self._pipeline.child(call, read)
        if result is None:  # the child has no such resource: the same words as for a hidden one
            raise ToolCallError(_unknown_resource(server, uri))
        size = sum(len(getattr(item, "text", "") or getattr(item, "blob", "")) for item in result.contents)
        large = size > _LOOP_WORK_CHARS
        return await bounded_work(large, self._read_value, policy, server, uri, result.contents)

    def _read_value(
        self,
        policy: Policy,
        server: CatalogServer,
        uri: str,
        contents: Sequence[types.TextResourceContents | types.BlobResourceContents],
    ) -> dict[str, Any]:
        # A read may answer with other URIs (a directory's files): each must be one the snippet could
        # read by its own URI, or it is left out, as a hidden resource is absent from a list.
        readable = [
            resource_contents_value(item)
            for item in contents
            if _readable(policy, server, str(item.uri)) or str(item.uri) == uri
        ]
        return self._redactor.redact_json({"uri": uri, "contents": readable})


def _parse(payload: dict[str, Any]) -> _Request:
    """The request, or ToolCallError saying why it is malformed (the guest's proxy never sends one so)."""
    server, op, uri = payload.get("server"), payload.get("op"), payload.get("uri")
    if not isinstance(server, str) or not server:
        raise ToolCallError('a resource request names its server: {"server": "github", "op": "list"}')
    if op == "list" and uri is None:
        return _Request(server, None, f"{server}:{_LIST}", {})
    if op != "read" or not isinstance(uri, str) or not uri:
        raise ToolCallError(
            'a resource request is {"server": ..., "op": "list"} or {"server": ..., "op": "read", "uri": ...}'
        )
    if len(uri) > MAX_URI_CHARS:
        raise ToolCallError(
            f"the URI is {len(uri):,} characters long; a resource URI takes at most {MAX_URI_CHARS:,}: "
            "read it by the URI list() shows"
        )
    try:
        uri = canonical_uri(uri)
    except NonCanonicalUri as exc:  # the URI itself is not repeated: it may hold a secret
        raise ToolCallError(
            f"the URI was refused: {exc} (the policy judges a URI as the child gets it)"
        ) from None
    return _Request(server, uri, f"{server}:{uri}", {"uri": uri})


def _resolve(catalog: Catalog, name: str) -> CatalogServer:
    """The server `name` names in the execution's catalog (Python or original name), or why none can serve."""
    server = catalog.server(name)
    if server is None:
        offering = [s.identifier for s in catalog.servers if s.resources]
        close = catalog.suggest_servers(name)
        hint = f"; did you mean {' or '.join(close)}?" if close else "."
        where = (
            f" Servers with resources: {', '.join(offering)}." if offering else " No server offers resources."
        )
        raise ToolCallError(f"unknown server {_shown(name)!r}{hint}{where}")
    if server.blocked is not None:
        raise ToolCallError(f"server {server.identifier!r} is blocked: {server.blocked}")
    return server


def _unknown_resource(server: CatalogServer, uri: str) -> str:
    return (
        f"no resource {_shown(uri)!r} on {server.identifier}; resources.{server.identifier}.list() lists its "
        "resources and URI templates"
    )


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_URI_CHARS else text[: _SHOWN_URI_CHARS - 3] + "..."


async def _pages(
    fetch: Callable[[str | None], Awaitable[tuple[list[T], str | None]]],
    keep: Callable[[T], bool],
    what: str,
    notes: list[str],
) -> list[T]:
    """Every entry `fetch` pages through that `keep` keeps, up to MAX_PAGES pages and MAX_ENTRIES
    entries; a note in `notes` says where it stopped short."""
    found: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page, cursor = await fetch(cursor)
        found.extend(entry for entry in page if keep(entry))
        if len(found) > MAX_ENTRIES or (len(found) == MAX_ENTRIES and cursor):
            notes.append(
                f"only the first {MAX_ENTRIES} {what} are listed (the gateway lists at most {MAX_ENTRIES})"
            )
            return found[:MAX_ENTRIES]
        if not cursor:
            return found
    notes.append(
        f"only the {what} on the first {MAX_PAGES} pages the server gave are listed (the gateway asks for "
        f"at most {MAX_PAGES})"
    )
    return found


def _resource_entry(resource: types.Resource) -> dict[str, Any]:
    fields = {
        "uri": resource.uri,
        "name": resource.name,
        "title": resource.title,
        "description": resource.description,
        "mime_type": resource.mime_type,
        "size": resource.size,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _template_entry(template: types.ResourceTemplate) -> dict[str, Any]:
    fields = {
        "uri_template": template.uri_template,
        "name": template.name,
        "title": template.title,
        "description": template.description,
        "mime_type": template.mime_type,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _noted(policy: Policy, server: CatalogServer, uri: str, entry: dict[str, Any]) -> dict[str, Any]:
    """An entry with what the policy says of reading it, when it is not simply allowed."""
    if policy.resource_denial(server.identifier, uri) is not None:
        entry["access"] = "denied by policy"
    return entry


def _readable(policy: Policy, server: CatalogServer, uri: str) -> bool:
    """Whether the snippet could read `uri` (a URI a child answered with) by its canonical form."""
    judged = _judged(uri)
    if judged is None:
        return False  # the snippet could not ask for it either
    identifier = server.identifier
    return policy.resource_visible(identifier, judged) and policy.resource_denial(identifier, judged) is None


def _judged(uri: str) -> str | None:
    """A URI a child gave, as the policy judges it: its canonical form, or None if it has none."""
    try:
        return canonical_uri(uri)
    except NonCanonicalUri:
        return None
