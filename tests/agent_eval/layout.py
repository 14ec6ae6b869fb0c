"""Names and places the harness shares between the agent's CLI (kept light: it starts on every call)
and the servers' side: the interfaces, the repository root, a world's state directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

__all__ = ["INTERFACES", "REPO", "Interface", "cli_command", "socket_path", "state_dir"]

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


def cli_command(interface: str, world: Path, *rest: str) -> list[str]:
    """The agent's CLI for `interface` over `world`, followed by `rest` (its options and subcommand)."""
    return [
        sys.executable,
        "-m",
        "tests.agent_eval.cli",
        "--interface",
        interface,
        "--world",
        str(world),
        *rest,
    ]
