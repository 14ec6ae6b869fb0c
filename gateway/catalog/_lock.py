"""The catalog lockfile: every child tool as the team reviewed it, by digest, and the drift from it.

A child that changes a tool's description or schema after review (a "rug pull"), or adds a tool,
changes what a model can be talked into doing. `codemode-gateway lock` records a sha256 of each part
of each tool the model reads; a tool whose parts no longer match, or that the lockfile lacks, is
drift. Digests are taken of the tool as the gateway holds it, after redaction: the lockfile holds no
secret, and a rotated secret quoted in a tool's docs does not read as a change.

One digest per part rather than one per tool: the drift then says which part changed (a new
description is the classic injection), and so does the lockfile's diff in a pull request.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.types import Tool
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from gateway.catalog._naming import first_of_each_name
from gateway.errors import ConfigError
from gateway.shared import as_object, printable

__all__ = [
    "LOCKED_PARTS",
    "LOCK_VERSION",
    "Drift",
    "ToolLock",
    "lock_commands",
    "lock_path",
    "read_lock",
    "tool_digests",
    "write_lock",
]

LOCK_VERSION = 1

LockedPart = Literal["title", "description", "inputSchema", "outputSchema", "annotations"]
LOCKED_PARTS: tuple[LockedPart, ...] = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""What the model reads of a tool besides its name (the name is the key it is locked under)."""

Change = Literal["new", "changed", "missing"]

_Digest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
_MAX_PROBLEMS = 5


class _Lockfile(BaseModel):
    """The file as written: servers by config name, their tools by name, each part's sha256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    servers: dict[str, dict[str, dict[LockedPart, _Digest]]]


def lock_path(config_file: Path) -> Path:
    """The lockfile beside a config file: `team.json` -> `team.lock.json`, in the same directory."""
    return config_file.with_name(f"{config_file.stem}.lock.json")


def lock_commands(config_file: Path) -> tuple[str, str]:
    """The commands that review the drift from a config's lockfile, and that write it again."""
    quoted = shlex.quote(str(config_file))
    return f"codemode-gateway check --config {quoted}", f"codemode-gateway lock --config {quoted}"


def _digest(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))  # ASCII: lone surrogates too
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def tool_digests(tool: Tool) -> dict[str, str]:
    """The sha256 of each part of `tool` it has, over sorted-key compact JSON (absent parts left out)."""
    data = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {part: _digest(data[part]) for part in LOCKED_PARTS if part in data}


@dataclass(frozen=True, slots=True, order=True)
class Drift:
    """One tool that differs from the lockfile: new (quarantined), changed (quarantined) or missing."""

    server: str
    """The server's name in the config (`mcpServers`)."""
    tool: str
    """The tool's name as its server lists it."""
    change: Change
    parts: tuple[str, ...] = ()
    """For a changed tool: the parts that differ."""

    def describe(self) -> str:
        """`new`, `missing`, or `changed: description, inputSchema`."""
        return f"changed: {', '.join(self.parts)}" if self.parts else self.change


@dataclass(frozen=True, slots=True)
class ToolLock:
    """A lockfile as read: where it is, the config it belongs to, and each server's tools' digests."""

    path: Path
    config_file: Path
    servers: Mapping[str, Mapping[str, Mapping[str, str]]]

    @property
    def tool_count(self) -> int:
        return sum(len(tools) for tools in self.servers.values())

    def drift(self, tools: Mapping[str, Sequence[Tool]], configured: Iterable[str]) -> list[Drift]:
        """How `tools` (by server name, as listed) differ from the lockfile, sorted by server and tool.

        Servers that have not listed (failed, or lazy and never started) are not compared: nothing
        is known of them. A locked server that is no longer configured has every tool missing.
        """
        drift: list[Drift] = []
        for server, listed in tools.items():
            locked = self.servers.get(server, {})
            current = {tool.name: tool_digests(tool) for tool in first_of_each_name(listed)}
            for name, digests in current.items():
                before = locked.get(name)
                if before is None:
                    drift.append(Drift(server, name, "new"))
                elif before != digests:
                    parts = tuple(p for p in LOCKED_PARTS if before.get(p) != digests.get(p))
                    drift.append(Drift(server, name, "changed", parts))
            drift += [Drift(server, name, "missing") for name in locked if name not in current]
        known = set(configured)
        for server, locked in self.servers.items():
            if server not in known and server not in tools:
                drift += [Drift(server, name, "missing") for name in locked]
        return sorted(drift)


def _refusal(path: Path, config_file: Path, problem: str) -> ConfigError:
    _, relock = lock_commands(config_file)
    return ConfigError(
        f"lockfile {path}: {problem}; restore it from version control, or review the tools and write "
        f"it again with `{relock}`"
    )


def read_lock(config_file: Path) -> ToolLock | None:
    """The lockfile beside `config_file`, None if there is none; ConfigError if it cannot be trusted.

    A lockfile that is there but unreadable or malformed refuses, never counts as absent: the
    gateway must not serve unlocked tools because a merge mangled the file.
    """
    path = lock_path(config_file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _refusal(path, config_file, f"cannot be read ({reason})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refusal(
            path, config_file, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    version = top.get("version") if (top := as_object(data)) is not None else None
    if isinstance(version, int) and version > LOCK_VERSION:
        problem = f"version {version} is newer than this gateway reads ({LOCK_VERSION})"
        raise _refusal(path, config_file, problem)
    try:
        lockfile = _Lockfile.model_validate(data)
    except ValidationError as exc:
        raise _refusal(path, config_file, f"not a codemode-gateway lockfile: {_problems(exc)}") from None
    servers: dict[str, dict[str, dict[str, str]]] = {
        server: {tool: {**parts} for tool, parts in tools.items()}
        for server, tools in lockfile.servers.items()
    }
    return ToolLock(path, config_file, servers)


def _problems(exc: ValidationError) -> str:
    errors = exc.errors()
    lines = [
        f"{'.'.join(printable(str(part)) for part in error['loc']) or '(top)'}: {error['msg']}"
        for error in errors[:_MAX_PROBLEMS]
    ]
    more = len(errors) - len(lines)
    return "; ".join(lines) + (f"; and {more} more" if more else "")


def write_lock(config_file: Path, tools: Mapping[str, Sequence[Tool]]) -> ToolLock:
    """Write the lockfile beside `config_file` for `tools` (by server name), atomically; returns it.

    Sorted, indented JSON with every non-ASCII character escaped, so that its diff reviews well and
    a bidirectional control in a tool's name cannot hide in it.
    """
    servers = {
        server: {tool.name: tool_digests(tool) for tool in first_of_each_name(listed)}
        for server, listed in tools.items()
    }
    text = json.dumps({"version": LOCK_VERSION, "servers": servers}, indent=2, sort_keys=True) + "\n"
    path = lock_path(config_file)
    # A reader (a gateway starting) sees the old file or the new one, never half of one.
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        # mkstemp makes the file private; a lockfile is committed and read by others, like the config.
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return ToolLock(path, config_file, servers)
