"""Which changes of a reload only an operator may apply.

Anything that can write the config file can trigger the file watch: a child serving the project the
file lies in, a `git checkout`. So a reload the watch triggers applies only changes that take reach
away (removing a server, narrowing the policy, lowering a limit); a change that runs other host
code, widens what a snippet may reach, or changes who may call or what is recorded is privileged,
and only a SIGHUP or `codemode-gateway reload` (same OS user or root) applies it. Each change is
named by its key, never by its value: a value may be a secret expanded from the environment.

A rule restricts only the servers its pattern can match: one removed together with every server it
could match (so that it matches none of the new config's, those added included) widens nothing, and
a server and the rules naming it can be taken out in one edit.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from gateway.auth.config import AuthConfig
from gateway.catalog import server_identifiers
from gateway.catalog.lockfile import ToolLock
from gateway.children.config import ServerConfig
from gateway.config import GatewayConfig
from gateway.policy.config import PolicyConfig, ToolPolicy, may_name_server
from gateway.reload._diff import ConfigDiff

__all__ = ["lock_widenings", "privileged_changes"]

LOWERABLE_SECTIONS = frozenset(
    {
        "startup_timeout_seconds",
        "max_message_bytes",
        "max_concurrent_calls",
        "middleware_timeout_seconds",
        "sandbox",
        "background",
    }
)
"""Limits an unattended reload may lower (every number equal or smaller); raising one, or changing
anything else in them, is privileged. Every other section but `mcpServers` and `policy` is privileged
whole: host code (`middleware`), who may call (`http`, and `auth` but for a static token removed),
what is recorded (`audit`), the key sealing paused runs (`approvals`), what the client is offered
(`expose`), and any section added later."""

_NARROWING_LISTS = ("deny", "hidden", "approve")  # a rule added here takes reach away
_WIDENING_LISTS = ("allow", "allow_writes")  # a rule added here gives reach


def privileged_changes(old: GatewayConfig, new: GatewayConfig, diff: ConfigDiff) -> list[str]:
    """Each change from `old` to `new` that only an operator may apply, one line naming its key."""
    changes = _server_changes(old, new, diff)
    fields = {info.alias or name: name for name, info in GatewayConfig.model_fields.items()}
    for key in diff.sections:
        if key == "mcpServers":
            continue
        before, after = getattr(old, fields[key]), getattr(new, fields[key])
        if key == "policy":
            changes += _policy_widenings(before, after, _server_names(new))
        elif key == "auth":
            changes += _auth_changes(before, after)
        elif key in LOWERABLE_SECTIONS:
            changes += _raised(key, before, after)
        else:
            changes.append(f"{key}: changed")
    return changes


def _server_names(config: GatewayConfig) -> set[str]:
    """Every name a rule could reach one of `config`'s servers by: as written, and the Python name the
    catalog gives it (left-out servers too: a reload may bring them in)."""
    names = [*config.mcp_servers, *config.unavailable_servers]
    return {*names, *server_identifiers(names).values()}


def _auth_changes(before: AuthConfig | None, after: AuthConfig | None) -> list[str]:
    """Every change of who may call: a static token added or changed lets someone in, and one removed,
    though it only turns a caller away, picks which callers keep their reach (a snippet that can write
    the config could remove every other caller's token); any change of the JWT issuer."""
    if before is None or after is None or before.oauth != after.oauth:
        return ["auth: changed"]
    changes: list[str] = []
    for name in {**before.tokens, **after.tokens}:
        old, new = before.tokens.get(name), after.tokens.get(name)
        if old != new:
            change = "added" if old is None else "removed" if new is None else "changed"
            changes.append(f"auth.tokens.{name}: {change}")
    return changes


def lock_widenings(old: ToolLock | None, new: ToolLock | None) -> list[str]:
    """What the lockfile `new` admits that `old` (the lock in force) would hold in quarantine."""
    if new is None:
        return ["lockfile: removed (every tool would be admitted unreviewed)"] if old is not None else []
    if old is None:
        return []  # a lockfile where there was none only holds tools back
    admitted = [
        f"{server}.{tool}"
        for server, tools in new.servers.items()
        for tool, digests in tools.items()
        if old.servers.get(server, {}).get(tool) != digests
    ]
    return [f"lockfile: admits {name} (new or changed digests)" for name in admitted]


def _server_changes(old: GatewayConfig, new: GatewayConfig, diff: ConfigDiff) -> list[str]:
    """Servers that would start, or run differently; a server left out (unavailable) runs nothing."""
    changes: list[str] = []
    for name in diff.added:
        if name in new.mcp_servers:
            changes.append(f"mcpServers.{name}: added")
    for name in diff.changed:
        entry = new.mcp_servers.get(name)
        if entry is None:
            continue  # now unavailable: it stops, as if removed
        before = old.mcp_servers.get(name)
        keys = _changed_keys(before, entry) if before is not None else ["was unavailable"]
        changes.append(f"mcpServers.{name}: changed ({', '.join(keys)})")
    return changes


def _changed_keys(before: ServerConfig, after: ServerConfig) -> list[str]:
    old, new = before.model_dump(by_alias=True), after.model_dump(by_alias=True)
    return [key for key in dict.fromkeys([*old, *new]) if old.get(key) != new.get(key)] or ["type"]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _raised(key: str, before: object, after: object) -> list[str]:
    """The limits of `key` that `after` raises, or changes otherwise (a model: field by field)."""
    if isinstance(before, BaseModel) and isinstance(after, BaseModel):
        return [
            line
            for name in type(before).model_fields
            for line in _raised(f"{key}.{name}", getattr(before, name), getattr(after, name))
        ]
    if before == after:
        return []
    if _is_number(before) and _is_number(after):
        if after < before:  # pyright: ignore[reportOperatorIssue]
            return []
        return [f"{key}: raised from {before} to {after}"]
    return [f"{key}: changed"]


def _policy_widenings(before: PolicyConfig, after: PolicyConfig, servers: set[str]) -> list[str]:
    """What `after` allows that `before` did not, as far as can be told rule by rule: only rules
    added to deny/hidden/approve, removed from allow/allow_writes, and stricter settings narrow; a
    rule removed that can match none of `servers` (the new config's) restricted only servers gone."""
    changes: list[str] = []
    for name in PolicyConfig.model_fields:
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if name in _NARROWING_LISTS:
            changes += [
                f"policy.{name}: {rule!r} removed"
                for rule in _missing(before, after, name)
                if may_name_server(rule, servers)
            ]
        elif name in _WIDENING_LISTS:
            if name == "allow" and any(rule.pattern == "*" for rule in before.rules("allow")):
                continue  # every tool was allowed: no allow list allows more
            changes += [f"policy.{name}: {rule!r} added" for rule in _missing(after, before, name)]
        elif name in ("read_only", "approve_destructive"):
            if old and not new:
                changes.append(f"policy.{name}: turned off")
        elif name == "max_tool_calls":
            changes += _cap_raised("policy.max_tool_calls", old, new)
        elif name == "tools":
            changes += _tool_widenings(old, new, servers)
        else:  # roles, and any key added later
            changes.append(f"policy.{name}: changed")
    return changes


def _missing(have: PolicyConfig, lack: PolicyConfig, name: str) -> list[str]:
    """Patterns of `have`'s list `name` that `lack`'s does not hold (the same rule, optional or not)."""
    kept = set(lack.rules(name))  # pyright: ignore[reportArgumentType]
    return [rule.pattern for rule in have.rules(name) if rule not in kept]  # pyright: ignore[reportArgumentType]


def _cap_raised(key: str, old: int | None, new: int | None) -> list[str]:
    """A cap where None means none: setting one or lowering it narrows."""
    if old == new:
        return []
    if new is not None and (old is None or new <= old):
        return []
    return [f"{key}: raised from {'none' if old is None else old} to {'none' if new is None else new}"]


def _tool_widenings(
    before: Mapping[str, ToolPolicy], after: Mapping[str, ToolPolicy], servers: set[str]
) -> list[str]:
    """A per-tool entry removed or loosened, but for a tool of a server none of `servers` names; one
    added only adds constraints."""
    changes: list[str] = []
    for tool, old in before.items():
        if tool.partition(".")[0] not in servers:
            continue  # its server is gone: the entry constrains nothing
        new = after.get(tool)
        where = f"policy.tools.{tool}"
        if new is None:
            changes.append(f"{where}: removed")
            continue
        if old.args is not None and new.args != old.args:
            changes.append(f"{where}.args: changed")
        changes += _cap_raised(f"{where}.max_calls", old.max_calls, new.max_calls)
        if old.rate is not None and new.rate != old.rate:
            changes.append(f"{where}.rate: changed")
        if old.optional != new.optional:
            changes.append(f"{where}.optional: changed")
    return changes
