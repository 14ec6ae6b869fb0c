"""`codemode-gateway reload`, and the `serve` options that decide how a serving gateway reloads."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK
from gateway.reload import ReloadOptions, request_reload
from gateway.shared import printable

__all__ = ["reload_command", "reload_options"]


def reload_options(args: argparse.Namespace) -> ReloadOptions:
    """How `serve` takes reloads, from its options."""
    return ReloadOptions(watch=not args.no_watch, pid_file=Path(args.pid_file) if args.pid_file else None)


def reload_command(args: argparse.Namespace) -> int:
    """Ask the gateway holding the pid file to reload its config; print what it did. Exit 1 if refused."""
    result = request_reload(Path(args.pid_file), args.wait)
    if args.json:
        print(json.dumps(result))
    else:
        print(_describe(result))
    return EXIT_FAILED if result.get("outcome") == "refused" else EXIT_OK


def _listed(values: list[object]) -> str:
    # Names and errors quote the config, which a child may have written: none may start a line.
    return ", ".join(printable(str(value)) for value in values)


def _describe(result: dict[str, object]) -> str:
    outcome = result.get("outcome")
    # `attempt` counts every reload, `reload` only those applied: the number search_docs names.
    applied = f" (reload {result['reload']})" if result.get("reload") is not None else ""
    lines = [f"attempt {result.get('attempt')}: {outcome}{applied}"]
    servers = result.get("servers")
    if isinstance(servers, dict):
        for key, names in servers.items():  # pyright: ignore[reportUnknownVariableType]
            if names:
                lines.append(f"  servers {key}: {_listed(names)}")  # pyright: ignore[reportUnknownArgumentType]
    privileged = "privileged changes" + (" applied" if outcome == "applied" else "")
    for key, label in (
        ("sections", "changed"),
        ("restart_needed", "need a restart"),
        ("privileged", privileged),
        ("restarted", "failed servers started again"),
    ):
        value = result.get(key)
        if isinstance(value, list) and value:
            lines.append(f"  {label}: {_listed(value)}")  # pyright: ignore[reportUnknownArgumentType]
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        lines.append("  refused, the config in force serves on:")
        lines += [f"    {printable(str(error))}" for error in errors]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return "\n".join(lines)
