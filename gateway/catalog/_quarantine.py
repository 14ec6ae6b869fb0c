"""The lockfile as a running gateway applies it: tools new or changed since the lock are quarantined.

A quarantined tool is not listed and a call to it is refused, naming the lockfile and the commands
that review the drift and write the lockfile again. Catalog changes at run time (a child's
`tools/list_changed`, a reconnect) rebuild the catalog, and so pass through here too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp.types import Tool

from gateway.catalog._lock import Drift, ToolLock, lock_commands, read_lock

__all__ = ["CatalogLock", "Quarantine"]

log = logging.getLogger("gateway.catalog")


@dataclass(frozen=True, slots=True)
class Quarantine:
    """The tools one catalog holds back, by (server name, tool name), and the lockfile they differ from."""

    lock_file: Path
    config_file: Path
    held: Mapping[tuple[str, str], Drift] = field(default_factory=dict[tuple[str, str], Drift])

    def holds(self, server_name: str, tool_name: str) -> bool:
        return (server_name, tool_name) in self.held

    def _review(self, them: str) -> str:
        check, lock = lock_commands(self.config_file)
        return f"until a person reviews {them} ({check}) and locks {them} again ({lock})"

    def refusal(self, server_name: str, tool_name: str, qualified: str) -> str:
        """Why a call to a held tool is refused: what changed, the lockfile, and who can release it."""
        drift = self.held.get((server_name, tool_name))
        what = "changed" if drift is not None and drift.change == "changed" else "new"
        return (
            f"{qualified} is quarantined: it is {what} since the tools were locked in "
            f"{self.lock_file}, so it cannot be called {self._review('it')}. Tell the user; do not retry."
        )

    def overview(self, count: int) -> str:
        """The line search_docs's overview gives `count` quarantined tools."""
        tools = f"{count} tool{'' if count == 1 else 's'}"
        return (
            f"{tools} quarantined: new or changed since the tools were locked in {self.lock_file}; "
            f"hidden {self._review('it' if count == 1 else 'them')}."
        )


class CatalogLock:
    """A config's lockfile, read once: the quarantine of each catalog, each drift logged once."""

    def __init__(self, lock: ToolLock) -> None:
        self.lock = lock
        self._logged: set[Drift] = set()

    @classmethod
    def beside(cls, config_file: Path | None) -> CatalogLock | None:
        """The lock of the config at `config_file`, None without one; ConfigError if it is malformed."""
        lock = read_lock(config_file) if config_file is not None else None
        return cls(lock) if lock is not None else None

    def quarantine(self, tools: Mapping[str, Sequence[Tool]], configured: Sequence[str]) -> Quarantine:
        """What to hold back of `tools` (by server name, as listed); drift not seen before is logged."""
        drift = self.lock.drift(tools, configured)
        for item in drift:
            if item not in self._logged:
                held = item.change != "missing"
                log.warning(
                    "a tool is quarantined" if held else "a locked tool is missing",
                    extra={
                        "server": item.server,
                        "tool": item.tool,
                        "change": item.describe(),
                        "lockfile": str(self.lock.path),
                    },
                )
        self._logged = set(drift)
        held = {(item.server, item.tool): item for item in drift if item.change != "missing"}
        return Quarantine(self.lock.path, self.lock.config_file, held)
