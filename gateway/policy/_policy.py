"""The compiled policy: what the model sees and may call, with which arguments, with whose approval.

Tools are matched by their qualified Python name (`server.tool`), resources by `server:uri`; a rule
holding a `:` matches resources only, `*` both, every other rule tools only (`policy/config.py`) -
except that `deny` and `hidden` of a whole server (`github.*`) take its resources too (fail closed).
Argument constraints and call quotas live beside it; the order in which a tool call meets these
checks belongs to the tool-call pipeline (`gateway.calls._tool_calls`), and is stated there only.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gateway.auth import Owner
from gateway.catalog import Catalog, CatalogEntry, CatalogServer
from gateway.children import ChildState
from gateway.errors import PolicyDenied, ToolCallError
from gateway.policy._quotas import Clock, ExecutionQuota, RateLimiter
from gateway.policy.config import (
    RULE_LISTS,
    PolicyConfig,
    PolicyRules,
    RuleList,
    is_resource_rule,
    is_tool_rule,
)
from gateway.shared import as_object

if TYPE_CHECKING:
    from gateway.policy._constraints import Constraint

__all__ = ["Policy", "is_destructive", "rule_source"]

_WILDCARDS = frozenset("*?[")


def _compiled_constraints(config: PolicyConfig) -> dict[str, Constraint]:
    """Each tool's `args` fragment, compiled; a policy without one never loads jsonschema."""
    fragments = {name: rules.args for name, rules in config.tools.items() if rules.args is not None}
    if not fragments:
        return {}
    from gateway.policy._constraints import Constraint

    return {name: Constraint(name, fragment) for name, fragment in fragments.items()}


class _Globs:
    """Compiled patterns that say which of them matched."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._compiled = [(p, re.compile(fnmatch.translate(p))) for p in patterns]

    def first(self, name: str) -> str | None:
        return next((p for p, regex in self._compiled if regex.match(name)), None)

    def __iter__(self) -> Iterator[str]:
        return (p for p, _ in self._compiled)


def rule_source(key: RuleList, pattern: str) -> str:
    """The key, among a policy's sources, of where one of its rules was written (a role's rule)."""
    return f"{key} {pattern}"


def is_destructive(entry: CatalogEntry) -> bool:
    """MCP's defaults: a tool not annotated read-only is destructive unless destructiveHint is false."""
    return entry.read_only is not True and entry.destructive is not False


class Policy:
    """The compiled policy: visibility, access, argument constraints, approvals and quotas."""

    def __init__(
        self,
        config: PolicyConfig | None = None,
        *,
        clock: Clock = time.monotonic,
        limiter: RateLimiter | None = None,
        roles: tuple[str, ...] = (),
        sources: Mapping[str, str] | None = None,
    ) -> None:
        """`roles`: the roles laid over `config` (`policy/_roles.py`); `sources`: where each tool's
        rules were written, for the errors that name them; `limiter`: rate windows shared with the
        policies of other roles."""
        self._config = config = config or PolicyConfig()
        self.roles = roles
        self._sources = dict(sources or {})

        def tools(key: RuleList) -> _Globs:
            return _Globs([p for p in config.patterns(key) if is_tool_rule(p)])

        def resources(key: RuleList, *, whole_servers: bool = False) -> _Globs:
            patterns = [p for p in config.patterns(key) if is_resource_rule(p)]
            if whole_servers:  # fail closed: denying or hiding `github.*` takes its resources too
                patterns += [f"{p[:-2]}:*" for p in config.patterns(key) if _whole_server(p)]
            return _Globs(patterns)

        self._allow_writes = tools("allow_writes")
        self._allow = tools("allow")
        self._deny = tools("deny")
        self._hidden = tools("hidden")
        self._approve = tools("approve")
        self._allow_resources = resources("allow")
        self._deny_resources = resources("deny", whole_servers=True)
        self._hidden_resources = resources("hidden", whole_servers=True)
        self._approve_resources = resources("approve")  # only `*` can be there: see `resource_denial`
        self._constraints = _compiled_constraints(config)
        self._limiter = limiter or RateLimiter(clock)

    @property
    def config(self) -> PolicyConfig:
        return self._config

    def visible(self, entry: CatalogEntry) -> bool:
        """False for hidden tools: search_docs lists them nowhere and calls find no such tool."""
        return self._hidden.first(entry.qualified) is None

    def server_visible(self, status: CatalogServer) -> bool:
        """False when a hidden pattern covers every tool the server could ever list (`git.*`, `*`),
        unless it offers resources that are not all hidden too."""
        # A pattern ending in `*` that matches "server." matches "server." + any tool name.
        prefix = f"{status.identifier}."
        if not any(p.endswith("*") and fnmatch.fnmatchcase(prefix, p) for p in self._hidden):
            return True
        return status.resources and self.resources_visible(status)

    def resources_visible(self, status: CatalogServer) -> bool:
        """False when a hidden pattern covers every resource the server could offer (`github:*`, `*`)."""
        prefix = f"{status.identifier}:"
        return not any(p.endswith("*") and fnmatch.fnmatchcase(prefix, p) for p in self._hidden_resources)

    def resource_visible(self, server: str, uri: str) -> bool:
        """False for a hidden resource of `server` (its Python name): never listed, and read as unknown.
        A template's `uri_template` is matched as written."""
        return self._hidden_resources.first(f"{server}:{uri}") is None

    def resource_denial(self, server: str, uri: str) -> str | None:
        """The rule that refuses reading a visible resource (deny, then allow, then approve), or None.

        `read_only` does not apply: reading a resource writes nothing. `approve` holds no resource rule
        (the config refuses one), but `*` there asks about every call, and a resource read cannot ask:
        such a read is refused rather than made unasked.
        """
        name = f"{server}:{uri}"
        if (pattern := self._deny_resources.first(name)) is not None:
            return f"{self._source('deny', pattern)}: {json.dumps(pattern)}"
        if self._allow_resources.first(name) is None:
            return "allow: no pattern matches it"
        if (pattern := self._approve_resources.first(name)) is not None:
            return f"approve: {json.dumps(pattern)}"
        return None

    def check_resource(self, server: str, uri: str) -> None:
        """Raise PolicyDenied naming the rule if the visible resource `server:uri` may not be read."""
        rule = self.resource_denial(server, uri)
        if rule is None:
            return
        name = f"{server}:{uri}"
        if rule.startswith("approve"):
            raise PolicyDenied(
                f"{name} needs the user's approval (policy.{rule} covers every call), which a resource "
                'read cannot ask for; to read resources, the team narrows approve to tools ("*.*")',
                rule=rule,
            )
        raise PolicyDenied(f"{name} is denied by policy ({rule})", rule=rule)

    def denial(self, entry: CatalogEntry) -> str | None:
        """The rule that refuses calls to a visible tool (deny, then allow, then read_only), or None."""
        name = entry.qualified
        if (pattern := self._deny.first(name)) is not None:
            return f"{self._source('deny', pattern)}: {json.dumps(pattern)}"
        if self._allow.first(name) is None:
            return "allow: no pattern matches it"
        if self.config.read_only and entry.read_only is not True and self._allow_writes.first(name) is None:
            where = self._sources.get("read_only", "read_only")
            return f"{where}: it is not annotated read-only and allow_writes does not match it"
        return None

    def _source(self, key: RuleList, pattern: str) -> str:
        """Where a rule that matched was written: `deny`, or `policy.roles["x"].deny` for a role's."""
        found = self._sources.get(rule_source(key, pattern))
        if found is None and pattern.endswith(":*"):  # taken from a whole server's `server.*`
            found = self._sources.get(rule_source(key, f"{pattern[:-2]}.*"))
        return found or key

    def allows(self, entry: CatalogEntry) -> bool:
        """Whether a snippet may call `entry` at all (visible and not denied)."""
        return self.visible(entry) and self.denial(entry) is None

    def check_access(self, entry: CatalogEntry) -> None:
        """Raise PolicyDenied naming the rule if `entry` may not be called."""
        if not self.visible(entry):
            # Resolve names in the filtered catalog so that this never runs; if it does, stay unknown.
            raise ToolCallError(f"unknown tool {entry.qualified!r}. Call search_docs to find tools.")
        rule = self.denial(entry)
        if rule is not None:
            raise PolicyDenied(f"{entry.qualified} is denied by policy ({rule})", rule=rule)

    def check_arguments(self, entry: CatalogEntry, wire: Mapping[str, Any]) -> None:
        """Raise PolicyDenied if the final wire arguments (what the child gets) break `tools.<name>.args`."""
        constraint = self._constraints.get(entry.qualified)
        if constraint is not None:
            constraint.check(entry, wire)

    def needs_approval(self, entry: CatalogEntry) -> bool:
        """Whether a human must approve each call (`approve`, or `approve_destructive` and destructive)."""
        if self._approve.first(entry.qualified) is not None:
            return True
        return self.config.approve_destructive and is_destructive(entry)

    def new_execution(self, owner: Owner | None = None) -> ExecutionQuota:
        """Fresh per-execution counts for `owner`'s execution, sharing this policy's rate windows."""
        return ExecutionQuota(self.config, self._limiter, owner=owner, sources=self._sources)

    def execute_code_annotations(
        self, entries: Iterable[CatalogEntry], *, complete: bool = True
    ) -> tuple[bool, bool]:
        """(readOnlyHint, destructiveHint) for execute_code, from the tools a snippet may call.

        Read-only when every callable tool is annotated read-only; destructive when any callable tool
        may be (see `is_destructive`). With `complete=False` (some child has not listed its tools yet)
        only what the policy alone guarantees counts: read_only with no allow_writes.
        """
        callable_entries = [entry for entry in entries if self.allows(entry)]
        read_only = all(entry.read_only is True for entry in callable_entries)
        destructive = any(is_destructive(entry) for entry in callable_entries)
        if not complete:
            guaranteed = self.config.read_only and not self.config.allow_writes
            return guaranteed, destructive or not guaranteed
        return read_only, destructive

    def access_note(self, entry: CatalogEntry) -> str | None:
        """What search_docs says of calls to a listed tool, when they are not simply allowed."""
        if self.denial(entry) is not None:
            return "denied by policy"
        if self.needs_approval(entry):
            return "needs the user's approval"
        return None

    def unmatched(self, catalog: Catalog) -> dict[str, str]:
        """Why the tools of each ready server must stay unreachable, by server identifier.

        A rule that names a server (its part before the dot has no wildcard) but matches none of its
        tools is a typo, and a typo must never leave a tool more reachable than the team wrote: until
        it is fixed, or marked optional, none of that server's tools can be called. `catalog` must be
        the unfiltered one (a hidden tool still counts as matched). A server whose tools share a Python
        name that a rule tells apart is blocked too (`_split_groups`).
        """
        blocked: dict[str, list[str]] = {}
        for where, pattern in self._named_rules():
            if not is_tool_rule(pattern):
                continue  # a resource rule: what resources a server has cannot be listed in full
            server_part, dot, _ = pattern.partition(".")
            server = catalog.server(server_part) if dot and not _WILDCARDS & set(server_part) else None
            if server is None or server.state is not ChildState.READY:
                continue
            names = [entry.qualified for entry in catalog.tools_of(server.identifier)]
            if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                continue
            close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.6)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            blocked.setdefault(server.identifier, []).append(
                f"{where} {json.dumps(pattern)} matches none of its tools{hint}"
            )
        reasons = {
            server: "; ".join(problems) + "; fix the rule, or mark it optional, to reach its tools"
            for server, problems in blocked.items()
        }
        for server, reason in self._split_groups(catalog).items():
            reasons[server] = f"{reasons[server]}; {reason}" if server in reasons else reason
        return reasons

    def _split_groups(self, catalog: Catalog) -> dict[str, str]:
        """Why each ready server whose tools share a Python name must stay unreachable, by identifier.

        `drop-all` and `drop_all` are both `drop_all` in Python: one gets the bare name, the other
        `drop_all_2`, and which is which changes with what the server lists. A rule list that matches
        some of such tools and not the others would move to another tool when the server's list
        changes, so the server is blocked until every list treats them alike (or the server renames one).
        """
        found: dict[str, list[str]] = {}
        lists = list(self._tool_rule_lists())
        for server in catalog.servers:
            if server.state is not ChildState.READY:
                continue
            for group in catalog.name_collisions(server.identifier):
                names = [entry.qualified for entry in group]
                for where, patterns in lists:
                    used = [p for p in patterns if any(fnmatch.fnmatchcase(name, p) for name in names)]
                    matched = [any(fnmatch.fnmatchcase(name, p) for p in used) for name in names]
                    if any(matched) and not all(matched):
                        tools = " and ".join(f"{json.dumps(e.tool_name)} ({e.qualified})" for e in group)
                        found.setdefault(server.identifier, []).append(
                            f"{where} ({', '.join(json.dumps(p) for p in used)}) tells apart its tools "
                            f"{tools}, whose Python names change places as the server's tool list changes"
                        )
        return {
            server: "; ".join(problems) + " (write rules that treat them alike, e.g. a pattern ending "
            'in "*", or have the server rename one, to reach its tools)'
            for server, problems in found.items()
        }

    def _tool_rule_lists(self) -> Iterator[tuple[str, list[str]]]:
        """(where, patterns) of every list of tool rules the team wrote, optional ones too, and of each
        `tools` entry (one name, with rules of its own)."""
        sections: list[tuple[str, PolicyRules]] = [("policy", self._config)]
        sections += [(f"policy.roles[{json.dumps(name)}]", role) for name, role in self._config.roles.items()]
        for where, section in sections:
            for key in RULE_LISTS:
                yield f"{where}.{key}", [p for p in section.patterns(key) if is_tool_rule(p)]
            for name in section.tools:
                yield f"{where}.tools[{json.dumps(name)}]", [name]

    def _named_rules(self) -> Iterator[tuple[str, str]]:
        """(where, pattern) of every rule the team wrote that must match something: none optional."""
        sections: list[tuple[str, PolicyRules]] = [("policy", self._config)]
        sections += [(f"policy.roles[{json.dumps(name)}]", role) for name, role in self._config.roles.items()]
        for where, section in sections:
            for key in RULE_LISTS:
                for index, rule in enumerate(section.rules(key)):
                    if not rule.optional:
                        yield f"{where}.{key}[{index}]", rule.pattern
            for name, rules in section.tools.items():
                if not rules.optional:
                    yield f"{where}.tools[{json.dumps(name)}]", name

    def diagnostics(self, entries: Iterable[CatalogEntry]) -> list[str]:
        """Argument constraints naming a property the tool does not take: likely typos (they fail closed)."""
        names = {entry.qualified: entry for entry in entries}
        found: list[str] = []
        for name, rules in self.config.tools.items():
            entry = names.get(name)
            if entry is None:
                continue
            where = f"policy.tools[{json.dumps(name)}]"
            wire = set(as_object(entry.input_schema.get("properties")) or {})
            for prop in sorted(as_object((rules.args or {}).get("properties")) or {}):
                if wire and prop not in wire:
                    found.append(
                        f"{where}.args.properties.{prop}: the tool takes no {prop!r} "
                        f"(its wire names: {', '.join(sorted(wire))})"
                    )
        return found


def _whole_server(pattern: str) -> bool:
    """`github.*`: a tool rule that names every tool of one server (no wildcard in the server's name)."""
    server, dot, rest = pattern.partition(".")
    return bool(dot) and rest == "*" and server != "" and not any(c in server for c in "*?[")
