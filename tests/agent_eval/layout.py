"""Names and places the harness shares between the agent's CLI (kept light: it starts on every call)
and the servers' side: the interfaces, the repository root, a world's state directory."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["INTERFACES", "REPO", "Interface", "socket_path", "state_dir"]

Interface = Literal["direct", "gateway", "peer"]
INTERFACES: tuple[Interface, ...] = ("direct", "gateway", "peer")

REPO = Path(__file__).resolve().parents[2]


def state_dir(world: Path) -> Path:
    """Where the harness keeps its own files for a world (configs, daemon sockets and logs)."""
    path = world / ".eval"
    path.mkdir(exist_ok=True)
    return path


def socket_path(world: Path, interface: Interface) -> Path:
    """The unix socket of the background server of `interface` for `world`."""
    return state_dir(world) / f"{interface}.sock"
