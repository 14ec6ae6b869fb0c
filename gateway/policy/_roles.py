"""Roles: the policy as each caller gets it, with the overlays of the roles that name the caller.

A role names callers by principal, by a group of their JWT, or by a scope of their token
(`policy.roles`). Its rule lists add to the policy's; its settings replace the policy's; of several
roles naming one caller, the strictest setting wins (see `RoleConfig`). Callers nobody identified
(stdio, HTTP without `auth`) get the policy as written.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from gateway.auth import Identity
from gateway.policy._policy import Policy, rule_source
from gateway.policy._quotas import MAX_TOOL_CALLS, Clock, RateLimiter
from gateway.policy.config import RULE_LISTS, PolicyConfig, RateLimit, ToolPolicy
from gateway.state import RateWindows

__all__ = ["Policies", "overlay", "roles_of"]


def roles_of(config: PolicyConfig, identity: Identity | None) -> tuple[str, ...]:
    """The names of the roles that name `identity`, in the config's order."""
    if identity is None:
        return ()
    return tuple(
        name
        for name, role in config.roles.items()
        if identity.principal in role.principals
        or not set(identity.groups).isdisjoint(role.groups)
        or not set(identity.scopes).isdisjoint(role.scopes)
    )


def overlay(config: PolicyConfig, names: Sequence[str]) -> tuple[PolicyConfig, dict[str, str]]:
    """The policy with the named roles laid over it, and where its rules were written: by tool name
    (`tools`), by `rule_source` (a role's rule), `read_only` and `max_tool_calls` (a role's setting)."""
    roles = [(_where(name), config.roles[name]) for name in names]
    sources = {tool: f"policy.tools[{json.dumps(tool)}]" for tool in config.tools}
    if not roles:
        return config, sources
    from_roles: dict[str, ToolPolicy] = {}
    for where, role in roles:
        for tool, rules in role.tools.items():
            earlier = from_roles.get(tool)
            from_roles[tool] = rules if earlier is None else _stricter(earlier, rules)
            written = f"{where}.tools[{json.dumps(tool)}]"
            sources[tool] = written if earlier is None else f"{sources[tool]} and {written}"
        for key in RULE_LISTS:
            for pattern in role.patterns(key):
                sources.setdefault(rule_source(key, pattern), f"{where}.{key}")
    update: dict[str, object] = {
        key: [*getattr(config, key), *(rule for _, role in roles for rule in getattr(role, key))]
        for key in RULE_LISTS
    }
    update["tools"] = {**config.tools, **from_roles}
    update["roles"] = {}
    read_only = [(where, role.read_only) for where, role in roles if role.read_only is not None]
    if read_only:  # a role's setting replaces the policy's; of several, True (stricter) wins
        update["read_only"] = strictest = any(flag for _, flag in read_only)
        sources["read_only"] = next(f"{where}.read_only" for where, flag in read_only if flag is strictest)
    destructive = [role.approve_destructive for _, role in roles if role.approve_destructive is not None]
    if destructive:
        update["approve_destructive"] = any(destructive)
    limits = [(role.max_tool_calls, where) for where, role in roles if role.max_tool_calls is not None]
    if limits:
        update["max_tool_calls"], where = min(limits)
        sources[MAX_TOOL_CALLS] = f"{where}.max_tool_calls"
    return config.model_copy(update=update), sources


def _where(role: str) -> str:
    """Where a role's rules are written in the config."""
    return f"policy.roles[{json.dumps(role)}]"


def _stricter(first: ToolPolicy, second: ToolPolicy) -> ToolPolicy:
    """One tool's rules from two roles that name the same caller: both constraints, the lower quota,
    the slower rate."""
    if first.args is None or second.args is None:
        args = first.args if second.args is None else second.args
    else:
        args = {"allOf": [first.args, second.args]}
    quotas = [q for q in (first.max_calls, second.max_calls) if q is not None]
    return ToolPolicy(
        args=args,
        max_calls=min(quotas) if quotas else None,
        rate=_slower(first.rate, second.rate),
        optional=first.optional and second.optional,
    )


def _slower(first: RateLimit | None, second: RateLimit | None) -> RateLimit | None:
    if first is None or second is None:
        return first or second
    return min(first, second, key=lambda rate: rate.calls / rate.per_seconds)


class Policies:
    """The compiled policy for each set of roles a caller has, sharing one set of rate windows."""

    def __init__(
        self,
        config: PolicyConfig | None = None,
        *,
        clock: Clock = time.monotonic,
        windows: RateWindows | None = None,
    ) -> None:
        """`windows`: where the rate windows are kept (the ones replicas share, with `state`)."""
        self._limiter = RateLimiter(clock, windows)
        self.base = Policy(config, limiter=self._limiter)
        self._compiled: dict[tuple[str, ...], Policy] = {(): self.base}
        self._lock = threading.Lock()

    def for_caller(self, identity: Identity | None) -> Policy:
        """The policy `identity` gets (the base policy for a caller nobody identified)."""
        names = roles_of(self.base.config, identity)
        with self._lock:
            policy = self._compiled.get(names)
            if policy is None:
                config, sources = overlay(self.base.config, names)
                policy = Policy(config, limiter=self._limiter, roles=names, sources=sources)
                self._compiled[names] = policy
            return policy
