"""What changed between the config in force and a new one, and which of it applies without a restart."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.config import GatewayConfig

__all__ = ["LIVE_SECTIONS", "ConfigDiff", "applicable", "diff_configs"]

LIVE_SECTIONS = frozenset(
    {
        "mcpServers",
        "startup_timeout_seconds",
        "max_message_bytes",
        "max_concurrent_calls",
        "restart",
        "policy",
        "expose",
        "middleware",
        "middleware_timeout_seconds",
        "sandbox",
    }
)
"""Top-level keys a reload applies at once (to new executions; children one by one). Any other key,
including one added to the config later and not listed here, is reported as needing a restart:
claiming a change is live when it is not would mislead the operator. `http` and `auth` are the
listener and its verifier (but for the static tokens of `auth`, which a reload applies:
`_live_auth`); `audit` the open log; `approvals` the key sealing paused runs; `search`
the model loaded at start. A changed `sandbox` gets a new sandbox, built before the reload applies;
the one it replaces is closed once the executions in it have ended."""

_IGNORED = frozenset({"$schema"})  # for editors only


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """Servers added, removed or changed (by name, in config order), and the other top-level keys
    that changed, split into those a reload applies and those that need a restart."""

    added: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])
    changed: list[str] = field(default_factory=list[str])
    sections: list[str] = field(default_factory=list[str])  # every top-level key that changed
    restart_needed: list[str] = field(default_factory=list[str])

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.sections)

    @property
    def servers(self) -> dict[str, list[str]]:
        """The server changes, as the audit record and the log name them."""
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


def _servers(config: GatewayConfig) -> dict[str, object]:
    """Each configured server's entry as it would run (after `${VAR}` expansion), or why it cannot."""
    entries: dict[str, object] = dict(config.mcp_servers)
    entries |= {name: ("unavailable", reason) for name, reason in config.unavailable_servers.items()}
    return entries


def diff_configs(old: GatewayConfig, new: GatewayConfig) -> ConfigDiff:
    """What differs between `old` and `new`: a server whose expanded entry differs in any key is changed."""
    before, after = _servers(old), _servers(new)
    sections: list[str] = []
    for name, info in GatewayConfig.model_fields.items():
        key = info.alias or name
        if key in _IGNORED:
            continue
        if key == "mcpServers":
            if before != after:
                sections.append(key)
        elif getattr(old, name) != getattr(new, name):
            sections.append(key)
    return ConfigDiff(
        added=[name for name in after if name not in before],
        removed=[name for name in before if name not in after],
        changed=[name for name in after if name in before and after[name] != before[name]],
        sections=sections,
        restart_needed=[
            key for key in sections if key not in LIVE_SECTIONS and not _live_auth(key, old, new)
        ],
    )


def _live_auth(key: str, old: GatewayConfig, new: GatewayConfig) -> bool:
    """Whether `key` is an `auth` change a reload applies: only its static tokens changed (the listener
    and the JWT issuer it was built with stay as they are)."""
    return (
        key == "auth" and old.auth is not None and new.auth is not None and old.auth.oauth == new.auth.oauth
    )


def applicable(old: GatewayConfig, new: GatewayConfig, diff: ConfigDiff) -> GatewayConfig:
    """`new` with the sections that need a restart kept as `old` has them: the config really in force."""
    kept = {
        name: getattr(old, name)
        for name, info in GatewayConfig.model_fields.items()
        if (info.alias or name) in diff.restart_needed
    }
    return new.model_copy(update=kept) if kept else new
