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
    roles = [(name, config.roles[name]) for name in names]
    sources = {tool: f"policy.tools[{json.dumps(tool)}]" for tool in config.tools}
    if not roles:
        return config, sources
    tools = dict(config.tools)
    from_roles: dict[str, ToolPolicy] = {}
    for name, role in roles:
        for tool, rules in role.tools.items():
            earlier = from_roles.get(tool)
            from_roles[tool] = rules if earlier is None else _stricter(earlier, rules)
            where = f"policy.roles[{json.dumps(name)}].tools[{json.dumps(tool)}]"
            sources[tool] = where if earlier is None else f"{sources[tool]} and {where}"
    tools.update(from_roles)
    update: dict[str, object] = {
        key: [*getattr(config, key), *(rule for _, role in roles for rule in getattr(role, key))]
        for key in RULE_LISTS
    }
    for name, role in roles:
        for key in RULE_LISTS:
            for pattern in role.patterns(key):
                sources.setdefault(rule_source(key, pattern), f"policy.roles[{json.dumps(name)}].{key}")
    update["read_only"] = read_only = _strictest_flag(config.read_only, [role.read_only for _, role in roles])
    setting = next((name for name, role in roles if role.read_only is not None), None)
    if setting is not None:
        named = next(name for name, role in roles if role.read_only is read_only)
        sources["read_only"] = f"policy.roles[{json.dumps(named)}].read_only"
    update["approve_destructive"] = _strictest_flag(
        config.approve_destructive, [role.approve_destructive for _, role in roles]
    )
    limits = [(role.max_tool_calls, name) for name, role in roles if role.max_tool_calls is not None]
    if limits:
        update["max_tool_calls"], name = min(limits)
        sources[MAX_TOOL_CALLS] = f"policy.roles[{json.dumps(name)}].max_tool_calls"
    update["tools"] = tools
    update["roles"] = {}
    return config.model_copy(update=update), sources


def _strictest_flag(policy: bool, roles: list[bool | None]) -> bool:
    """A role's setting replaces the policy's; of several roles' settings, True (stricter) wins."""
    set_by_roles = [flag for flag in roles if flag is not None]
    return any(set_by_roles) if set_by_roles else policy


def _stricter(first: ToolPolicy, second: ToolPolicy) -> ToolPolicy:
    """One tool's rules from two roles that name the same caller: both constraints, the lower quota,
    the slower rate."""
    args = first.args if second.args is None else second.args if first.args is None else None
    if first.args is not None and second.args is not None:
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

    def __init__(self, config: PolicyConfig | None = None, *, clock: Clock = time.monotonic) -> None:
        self._limiter = RateLimiter(clock)
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
