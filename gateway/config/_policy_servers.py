"""Policy rules and `expose` entries that name a server the config does not have: a config error,
with a did-you-mean.

A rule's pattern is an fnmatch glob over `server.tool` Python names (or `server:uri` for resources).
Whether it can match a tool or resource of some configured server is decided from the part before its
first `.` or `:` (or `*`), by `policy.config.may_name_server`; a rule marked
`optional` is not checked. Server names are compared as written and as Python names (`python_name`,
a local approximation of the catalog's rule), so a rule is refused only when it certainly names no
configured server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gateway.config._clients import python_name
from gateway.config._errors import did_you_mean
from gateway.policy.config import RULE_LISTS, PolicyConfig, may_name_server, server_part

__all__ = ["unknown_server_exposes", "unknown_server_rules"]


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
        part = server_part(pattern)[0].strip("*?")
        hint = did_you_mean(part, suggestions) or f" (configured: {known})"
        return f"{where}: {json.dumps(pattern)} names no configured server{hint}"

    lines: list[str] = []
    for key in RULE_LISTS:
        for index, rule in enumerate(policy.rules(key)):
            if not rule.optional and not may_name_server(rule.pattern, servers):
                lines.append(problem(f"policy.{key}[{index}]", rule.pattern))
    for name, rules in policy.tools.items():
        if not rules.optional and name.partition(".")[0] not in servers:
            lines.append(problem(f"policy.tools[{json.dumps(name)}]", name))
    return lines
