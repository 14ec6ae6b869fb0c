"""The lockfile, reviewed tools pinned by digest, and the quarantine of tools changed since: a sub-face,
since the operator's commands (`lock`, `drift`) and reload use it apart from search and calls."""

from gateway.catalog._lock import (
    LOCKED_PARTS,
    Drift,
    ToolLock,
    lock_commands,
    lock_path,
    read_lock,
    write_lock,
)
from gateway.catalog._quarantine import CatalogLock, Quarantine

__all__ = (
    "LOCKED_PARTS",
    "CatalogLock",
    "Drift",
    "Quarantine",
    "ToolLock",
    "lock_commands",
    "lock_path",
    "read_lock",
    "write_lock",
)
