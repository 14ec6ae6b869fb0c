"""`codemode-gateway check`: validate the config, connect to every child once, print a table (and the
drift from the lockfile, if there is one)."""

from __future__ import annotations

import argparse
import json
import sys

import anyio
from mcp import types

from gateway.audit import check_audit_log
from gateway.calls import child_pool, expose_tools, gateway_secrets
from gateway.catalog import Catalog
from gateway.catalog.docs import semantic_search
from gateway.children import ChildState, ChildStatus
from gateway.cli._drift import config_lock, print_drift
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.config import (
    GatewayConfig,
    find_config_file,
    find_literal_secrets,
    literal_secret_warning,
    read_config_data,
)
from gateway.policy import Policy
from gateway.reload import reach_warnings
from gateway.shared import Redactor, as_object, format_table
from gateway.telemetry import check_traces_environment

__all__ = ["check_children", "check_command", "format_statuses"]


async def check_children(config: GatewayConfig) -> tuple[list[ChildStatus], dict[str, list[types.Tool]]]:
    """Connect to every child of `config` once: how each one fared, and the tools of the ready ones."""
    # One attempt each, lazy children included: `check` reports, it does not supervise.
    async with child_pool(config, Redactor(gateway_secrets(config)), supervise=False) as pool:
        await pool.wait_ready()
        return pool.statuses(), pool.tools()


def format_statuses(statuses: list[ChildStatus], left_out: frozenset[str] = frozenset()) -> str:
    """A plain-text table: child, transport, status, tools, startup ms, error; the children in
    `left_out` (entries that run this gateway itself) say so instead of failing."""
    header = ("child", "transport", "status", "tools", "startup ms", "error")
    rows = [
        (
            s.name,
            s.transport,
            "left out" if s.name in left_out else _state(s),
            str(s.tool_count) if s.state is ChildState.READY else "-",
            f"{s.startup_ms:.0f}" if s.startup_ms is not None else "-",
            s.error or "",
        )
        for s in statuses
    ]
    return format_table(header, rows)


def _state(status: ChildStatus) -> str:
    return f"{status.state.value} (attempt {status.attempt})" if status.attempt else status.state.value


def check_command(args: argparse.Namespace) -> int:
    """`check`: 0 when every child connected (an entry that runs this gateway itself is left out, not
    failed), every policy rule matches and no tool differs from the lockfile (if there is one), 1 if not."""
    config = load_config_for_cli(
        args.config, args.children, say=lambda note: print(f"note: {note}", file=sys.stderr)
    )
    file_servers: dict[str, object] = {}
    if (file := find_config_file(args.config)) is not None:
        data = read_config_data(file)
        for path in find_literal_secrets(data):
            print(literal_secret_warning(path), file=sys.stderr)
        file_servers = as_object((as_object(data) or {}).get("mcpServers")) or {}
    _print_command_line(config, file_servers)
    lock = config_lock(config)  # before the children start: a malformed lockfile is a config error
    semantic_search(config.search.semantic)  # `on` without the model's runtime: a config error, as in `serve`
    if config.audit is not None:  # a log `serve` could not open: a config error, as in `serve`
        check_audit_log(config.audit, config.base_dir)
    check_traces_environment()  # an OTEL_* exporter `serve` could not build, likewise
    for line in reach_warnings(config):  # a heuristic: it warns, and the exit code does not change
        print(f"warning: {line}", file=sys.stderr)
    if not config.mcp_servers and not config.unavailable_servers and lock is None:
        print("no child servers configured (mcpServers is empty)")
        return EXIT_OK
    statuses, tools = anyio.run(check_children, config)
    print(format_statuses(statuses, config.self_entries))
    # Named as `serve` names them: tools new since the lockfile go around the reviewed tools' names.
    catalog = Catalog(tools, statuses, reviewed=lock.servers if lock is not None else None)
    policy = Policy(config.policy)
    blocked = policy.unmatched(catalog)
    for server, reason in blocked.items():  # a typo: the server's tools stay unreachable until fixed
        print(f"error: server {server} is blocked: {reason}", file=sys.stderr)
    for line in policy.diagnostics(catalog):
        print(f"warning: {line}", file=sys.stderr)
    drifted = lock is not None and print_drift(lock, tools, statuses)
    unlisted = _check_exposed(config, catalog, policy, blocked, tools)
    connected = all(s.state is ChildState.READY or s.name in config.self_entries for s in statuses)
    return EXIT_OK if connected and not blocked and not drifted and not unlisted else EXIT_FAILED


def _print_command_line(config: GatewayConfig, file_servers: dict[str, object]) -> None:
    """Say which children came from the command line, and which of the file's entries they replace."""
    if not config.command_line:
        return
    replaced = [name for name in config.command_line if name in file_servers]
    line = "children from the command line: " + ", ".join(config.command_line)
    print(line + (f" (replacing the config file's {', '.join(replaced)})" if replaced else ""))


def _check_exposed(
    config: GatewayConfig,
    catalog: Catalog,
    policy: Policy,
    blocked: dict[str, str],
    tools: dict[str, list[types.Tool]],
) -> int:
    """Print what `expose` lists (with the wire names) and why any entry is not; how many are not."""
    if not config.expose:
        return 0
    visible = catalog.filtered(policy.visible, policy.server_visible, blocked=blocked)
    exposure = expose_tools(config.expose, visible, policy, everything=lambda: catalog, listed=tools)
    if exposure.tools:
        print("exposed: " + ", ".join(f"{tool.name} ({tool.entry.qualified})" for tool in exposure.tools))
    for name, unlisted in exposure.unlisted.items():
        where = f"expose[{config.expose.index(name)}]"
        print(f"error: {where} {json.dumps(name)} is not listed: {unlisted.reason}", file=sys.stderr)
    return len(exposure.unlisted)
