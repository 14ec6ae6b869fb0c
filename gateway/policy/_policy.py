"""The compiled policy: what the model sees and may call, with which arguments, with whose approval.

Argument constraints and call quotas live beside it; the order in which a tool call meets these
checks belongs to the tool-call pipeline (`gateway._tool_calls`), and is stated there only.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from gateway._json import as_object
from gateway.catalog import Catalog, CatalogEntry, CatalogServer
from gateway.children import ChildState
from gateway.errors import PolicyDenied, ToolCallError
from gateway.policy._constraints import Constraint
from gateway.policy._quotas import Clock, ExecutionQuota, RateLimiter
from gateway.policy.config import RULE_LISTS, PolicyConfig

__all__ = ["Policy", "is_destructive"]

_WILDCARDS = frozenset("*?[")


class _Globs:
    """Compiled patterns that say which of them matched."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._compiled = [(p, re.compile(fnmatch.translate(p))) for p in patterns]

    def first(self, name: str) -> str | None:
        return next((p for p, regex in self._compiled if regex.match(name)), None)

    def __iter__(self) -> Iterator[str]:
        return (p for p, _ in self._compiled)


def is_destructive(entry: CatalogEntry) -> bool:
    """MCP's defaults: a tool not annotated read-only is destructive unless destructiveHint is false."""
    return entry.read_only is not True and entry.destructive is not False


class Policy:
    """The compiled policy: visibility, access, argument constraints, approvals and quotas."""

    def __init__(self, config: PolicyConfig | None = None, *, clock: Clock = time.monotonic) -> None:
        self._config = config = config or PolicyConfig()
        self._allow_writes = _Globs(config.patterns("allow_writes"))
        self._allow = _Globs(config.patterns("allow"))
        self._deny = _Globs(config.patterns("deny"))
        self._hidden = _Globs(config.patterns("hidden"))
        self._approve = _Globs(config.patterns("approve"))
        self._constraints = {
            name: Constraint(name, rules.args)
            for name, rules in config.tools.items()
            if rules.args is not None
        }
        self._limiter = RateLimiter(clock)

    @property
    def config(self) -> PolicyConfig:
        return self._config

    def visible(self, entry: CatalogEntry) -> bool:
        """False for hidden tools: search_docs lists them nowhere and calls find no such tool."""
        return self._hidden.first(entry.qualified) is None

    def server_visible(self, status: CatalogServer) -> bool:
        """False when a hidden pattern covers every tool the server could ever list (`git.*`, `*`)."""
        # A pattern ending in `*` that matches "server." matches "server." + any tool name.
        prefix = f"{status.identifier}."
        return not any(p.endswith("*") and fnmatch.fnmatchcase(prefix, p) for p in self._hidden)

    def denial(self, entry: CatalogEntry) -> str | None:
        """The rule that refuses calls to a visible tool (deny, then allow, then read_only), or None."""
        name = entry.qualified
        if (pattern := self._deny.first(name)) is not None:
            return f"deny: {json.dumps(pattern)}"
        if self._allow.first(name) is None:
            return "allow: no pattern matches it"
        if self.config.read_only and entry.read_only is not True and self._allow_writes.first(name) is None:
            return "read_only: it is not annotated read-only and allow_writes does not match it"
        return None

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

    def new_execution(self) -> ExecutionQuota:
        """Fresh per-execution counts, sharing this policy's gateway-wide rate limits."""
        return ExecutionQuota(self.config, self._limiter)

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
        the unfiltered one (a hidden tool still counts as matched).
        """
        blocked: dict[str, list[str]] = {}
        for where, pattern in self._named_rules():
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
        return {
            server: "; ".join(problems) + "; fix the rule, or mark it optional, to reach its tools"
            for server, problems in blocked.items()
        }

    def _named_rules(self) -> Iterator[tuple[str, str]]:
        """(where, pattern) of every rule the team wrote that must match something: none optional."""
        for key in RULE_LISTS:
            for index, rule in enumerate(self._config.rules(key)):
                if not rule.optional:
                    yield f"policy.{key}[{index}]", rule.pattern
        for name, rules in self._config.tools.items():
            if not rules.optional:
                yield f"policy.tools[{json.dumps(name)}]", name

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
