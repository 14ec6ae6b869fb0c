"""The drift between the listed tools and the config's lockfile, as `check` and `lock` print it."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence

from mcp import types

from gateway.catalog.lockfile import LOCKED_PARTS, Drift, ToolLock, lock_commands, read_lock
from gateway.children import ChildStatus
from gateway.config import GatewayConfig
from gateway.shared import format_table, printable

__all__ = ["config_lock", "format_drift", "print_drift", "what_they_say_now"]

_MAX_PART_CHARS = 4000  # a description is rarely longer; a schema past this is summarised by its size


def config_lock(config: GatewayConfig) -> ToolLock | None:
    """The lockfile beside the config file, if there is one; ConfigError if it is malformed."""
    return read_lock(config.config_file) if config.config_file is not None else None


def format_drift(drift: Sequence[Drift]) -> str:
    """A plain-text table: server, tool, change (`new`, `missing`, `changed: description, ...`)."""
    return format_table(("server", "tool", "change"), [(d.server, d.tool, d.describe()) for d in drift])


def _tools(count: int) -> str:
    return f"{count} tool{'' if count == 1 else 's'}"


def print_drift(
    lock: ToolLock, tools: Mapping[str, Sequence[types.Tool]], statuses: Sequence[ChildStatus]
) -> bool:
    """Print how the listed tools differ from `lock`, as a table; True when they differ at all."""
    drift = lock.drift(tools, [status.name for status in statuses])
    if not drift:
        print(f"\nlockfile {lock.path}: every listed tool matches it")
        return False
    held = sum(1 for item in drift if item.change != "missing")
    print(f"\nlockfile {lock.path}: {_tools(len(drift))} differ from it")
    print(format_drift(drift))
    if shown := what_they_say_now(drift, tools):
        print("\nwhat they say now (review before locking):")
        print(shown)
    _, relock = lock_commands(lock.config_file)
    print(
        f"error: {_tools(held)} quarantined (not listed, calls refused), {len(drift) - held} missing; "
        f"review the changes, then `{relock}` accepts them",
        file=sys.stderr,
    )
    return True


def what_they_say_now(drift: Sequence[Drift], tools: Mapping[str, Sequence[types.Tool]]) -> str:
    """Each new or changed tool's parts that differ from the lockfile, as JSON (a new tool's all)."""
    listed = {(server, tool.name): tool for server, own in tools.items() for tool in reversed(own)}
    lines: list[str] = []
    for item in drift:
        tool = listed.get((item.server, item.tool))
        if tool is None:
            continue  # missing: nothing to show
        data = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for part in item.parts or [p for p in LOCKED_PARTS if p in data]:
            value = json.dumps(data.get(part), ensure_ascii=False, sort_keys=True)
            if len(value) > _MAX_PART_CHARS:
                value = f"{value[:_MAX_PART_CHARS]}... ({len(value) - _MAX_PART_CHARS} more characters)"
            lines.append(f"{printable(item.server)}.{printable(item.tool)} {part}: {printable(value)}")
    return "\n".join(lines)
