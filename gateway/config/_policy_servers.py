"""Policy rules and `expose` entries that name a server the config does not have: a config error,
with a did-you-mean.

A rule's pattern is an fnmatch glob over `server.tool` Python names (or `server:uri` for resources).
Whether it can match a tool or resource of some configured server is decided from the part before its
first `.` or `:` (or `*`); a rule marked
`optional` is not checked. Server names are compared as written and as Python names (`python_name`,
a local approximation of the catalog's rule), so a rule is refused only when it certainly names no
configured server.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from typing import Any

from gateway.config._clients import python_name
from gateway.config._errors import did_you_mean
from gateway.policy.config import RULE_LISTS, PolicyConfig

__all__ = ["unknown_server_exposes", "unknown_server_rules"]


def _server_part(pattern: str) -> tuple[str, bool]:
    """The pattern up to its first unbracketed `.`, `:` or `*`, and whether a `.` or `:` ended it."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] != "!" else i + 3)
            i = end + 1 if end >= 0 else len(pattern)
            continue
        if char in ".:*":
            return pattern[:i], char != "*"
        i += 1
    return pattern, False


def _can_match(pattern: str, servers: set[str]) -> bool:
    part, dotted = _server_part(pattern)
    if not part:
        return True  # `*`, `*.read_*`: any server
    if dotted:
        # "S.T" holds one dot (and "S:U" its first colon), which the pattern's literal one takes: `part`
        # must match S exactly.
        return any(fnmatch.fnmatchcase(server, part) for server in servers)
    if any(char in part for char in "?["):
        return True  # `g?t*`: a wildcard might take the dot too; not worth deciding
    return any(server.startswith(part) for server in servers)


def _configured(configured: Iterable[str]) -> tuple[set[str], list[str], str]:
    """The server names a rule may use (as written and as Python names), the suggestions, the list."""
    names = list(configured)
    suggestions = [python_name(name) for name in names]
    known = ", ".join(suggestions) if suggestions else "none is configured"
    return set(names) | set(suggestions), suggestions, known


def unknown_server_exposes(expose: Iterable[Any], configured: Iterable[str]) -> list[str]:
    """A line for each `expose` entry whose server is not configured (the model checks the rest)."""
    servers, suggestions, known = _configured(configured)
    lines: list[str] = []
    for index, name in enumerate(expose):
        if not isinstance(name, str) or "." not in name:
            continue  # not a tool name at all: the model says so
        server = name.partition(".")[0]
        if server not in servers:
            hint = did_you_mean(server, suggestions) or f" (configured: {known})"
            lines.append(f"expose[{index}]: {json.dumps(name)} names no configured server{hint}")
    return lines


def unknown_server_rules(policy: PolicyConfig, configured: Iterable[str]) -> list[str]:
    """A line for each rule (of the lists and the `tools` keys) that names no configured server."""
    servers, suggestions, known = _configured(configured)

    def problem(where: str, pattern: str) -> str:
        part = _server_part(pattern)[0].strip("*?")
        hint = did_you_mean(part, suggestions) or f" (configured: {known})"
        return f"{where}: {json.dumps(pattern)} names no configured server{hint}"

    lines: list[str] = []
    for key in RULE_LISTS:
        for index, rule in enumerate(policy.rules(key)):
            if not rule.optional and not _can_match(rule.pattern, servers):
                lines.append(problem(f"policy.{key}[{index}]", rule.pattern))
    for name, rules in policy.tools.items():
        if not rules.optional and name.partition(".")[0] not in servers:
            lines.append(problem(f"policy.tools[{json.dumps(name)}]", name))
    return lines
