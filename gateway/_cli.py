"""The `codemode-gateway` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp import types
from pydantic import ValidationError

from gateway._audit import AuditConfig, format_records, parse_since, read_audit, select_records
from gateway._config import (
    CONFIG_ENV,
    GatewayConfig,
    config_json_schema,
    format_validation_error,
    load_config,
    read_config_data,
)
from gateway._escape_report import add_sandbox_test_arguments, run_sandbox_test
from gateway._literal_secrets import find_literal_secrets, literal_secret_warning
from gateway._logging import configure_logging
from gateway._server import run_stdio
from gateway.catalog import Catalog
from gateway.children import ChildPool, ChildState, ChildStatus
from gateway.errors import ConfigError, GatewayError
from gateway.policy import Policy
from gateway.sandbox import ExecutionResult, Sandbox

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codemode-gateway", description="A code-mode MCP gateway.")
    parser.add_argument("--log-level", default=os.environ.get("CODEMODE_LOG_LEVEL", "WARNING"))
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="serve MCP over stdio (the default command)")
    serve.add_argument("--config", help="config file (default: $CODEMODE_CONFIG, else built-in)")

    run = commands.add_parser("exec", help="run one snippet in the sandbox and print its outcome")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("-c", dest="code", help="the snippet's source")
    source.add_argument("file", nargs="?", help="a file holding the snippet ('-' for stdin)")
    run.add_argument("--config", help="config file (default: $CODEMODE_CONFIG, else built-in)")
    run.add_argument("--timeout", type=float, help="wall-clock budget in seconds (capped by the config)")
    run.add_argument("--json", action="store_true", help="print the outcome as one JSON object")

    pre = commands.add_parser("precompile", help="compile the sandbox component into the cache (done once)")
    pre.add_argument("--config", help="config file (its sandbox settings shape the engine)")

    check = commands.add_parser(
        "check", help="validate the config, connect to every child, print their status"
    )
    check.add_argument("--config", help="config file (default: $CODEMODE_CONFIG, else built-in)")

    audit = commands.add_parser("audit", help="print the audit log (rotated files too, oldest first)")
    audit.add_argument("--config", help="config file whose `audit` section names the log")
    audit.add_argument("--path", help="the log file itself (instead of --config)")
    audit.add_argument("--since", help="only records at or after an ISO time or an age (30m, 1h, 2d)")
    audit.add_argument("--tool", help="only the tool calls whose tool matches this glob (github.*)")
    audit.add_argument("--json", action="store_true", help="print the records as JSON lines")

    add_sandbox_test_arguments(
        commands.add_parser("sandbox-test", help="run the sandbox escape suite against the config's limits")
    )
    commands.add_parser("schema", help="print the config file's JSON Schema")
    return parser


def _read_source(args: argparse.Namespace) -> str:
    if args.code is not None:
        return str(args.code)
    if args.file == "-":
        return sys.stdin.read()
    try:
        with open(args.file, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read snippet {args.file}: {exc.strerror or exc}") from None


def _print_human(result: ExecutionResult) -> None:
    if result.stdout:
        sys.stdout.write(result.stdout if result.stdout.endswith("\n") else result.stdout + "\n")
    if result.stderr:
        sys.stderr.write(result.stderr if result.stderr.endswith("\n") else result.stderr + "\n")
    if result.error is not None:
        sys.stderr.write(result.error.traceback or f"{result.error.type}: {result.error.message}\n")
    elif result.value_repr is not None:
        print(result.value_repr)


def _exec(args: argparse.Namespace) -> int:
    code = _read_source(args)
    config = load_config(args.config)
    with Sandbox(config.sandbox) as sandbox:
        result = anyio.run(lambda: sandbox.execute(code, timeout=args.timeout))
    if args.json:
        print(result.model_dump_json())
    else:
        _print_human(result)
    return EXIT_OK if result.ok else EXIT_FAILED


def _precompile(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    started = time.monotonic()
    with Sandbox(config.sandbox.model_copy(update={"prewarm_instances": 0})) as sandbox:
        what = "compiled" if sandbox.compiled_on_load else "already cached"
    print(
        f"sandbox component {sandbox.component_sha256[:12]}: {what} ({time.monotonic() - started:.1f} s)",
        file=sys.stderr,
    )
    return EXIT_OK


def _config_file(args: argparse.Namespace) -> Path | None:
    chosen = args.config or os.environ.get(CONFIG_ENV)
    return Path(chosen) if chosen else None


async def check_children(config: GatewayConfig) -> tuple[list[ChildStatus], dict[str, list[types.Tool]]]:
    """Connect to every child of `config` once: how each one fared, and the tools of the ready ones."""
    # One attempt each, lazy children included: `check` reports, it does not supervise.
    pool = ChildPool(
        config.mcp_servers,
        startup_timeout_seconds=config.startup_timeout_seconds,
        restart=config.restart,
        reconnect=False,
        start_lazy=True,
    )
    async with pool:
        await pool.wait_ready()
        return pool.statuses(), pool.tools()


def format_statuses(statuses: list[ChildStatus]) -> str:
    """A plain-text table: child, transport, status, tools, startup ms, error."""
    header = ("child", "transport", "status", "tools", "startup ms", "error")
    rows = [
        (
            s.name,
            s.transport,
            f"{s.state.value} (attempt {s.attempt})" if s.attempt else s.state.value,
            str(s.tool_count) if s.state is ChildState.READY else "-",
            f"{s.startup_ms:.0f}" if s.startup_ms is not None else "-",
            s.error or "",
        )
        for s in statuses
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def _check(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if (file := _config_file(args)) is not None:
        for path in find_literal_secrets(read_config_data(file)):
            print(literal_secret_warning(path), file=sys.stderr)
    if not config.mcp_servers:
        print("no child servers configured (mcpServers is empty)")
        return EXIT_OK
    statuses, tools = anyio.run(check_children, config)
    print(format_statuses(statuses))
    catalog = Catalog(tools, statuses)
    for line in Policy(config.policy).diagnostics(catalog):  # rules that match nothing: likely typos
        print(f"warning: {line}", file=sys.stderr)
    return EXIT_OK if all(status.state is ChildState.READY for status in statuses) else EXIT_FAILED


def _audit_path(args: argparse.Namespace) -> Path:
    if args.path:
        return Path(args.path)
    file = _config_file(args)
    # Only the `audit` section is read: reading a log must not need the children's tokens in the environment.
    data = read_config_data(file) if file is not None else None
    section = data.get("audit") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if file is None or section is None:
        raise ConfigError('no audit log configured: add an "audit" section to the config, or pass --path')
    try:
        audit = AuditConfig.model_validate(section)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, f"{file}: audit")) from None
    return audit.resolve_path(file.resolve().parent)


def _audit(args: argparse.Namespace) -> int:
    path = _audit_path(args)
    since = parse_since(args.since) if args.since else None
    log = read_audit(path)
    if not log.records and not log.malformed and not path.exists():
        print(f"codemode-gateway: no audit log at {path}", file=sys.stderr)
        return EXIT_FAILED
    if log.malformed:
        print(f"codemode-gateway: skipped {log.malformed} unreadable line(s) in {path}", file=sys.stderr)
    records = select_records(log.records, since=since, tool=args.tool)
    if args.json:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
    else:
        print(format_records(records))
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    run_stdio(load_config(args.config))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(config_json_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `codemode-gateway` console script."""
    args = _parser().parse_args(argv)
    if args.command is None:
        args = _parser().parse_args([*(argv or sys.argv[1:]), "serve"])
    configure_logging(args.log_level)
    try:
        commands = {
            "serve": _serve,
            "exec": _exec,
            "precompile": _precompile,
            "check": _check,
            "audit": _audit,
            "schema": _schema,
            "sandbox-test": run_sandbox_test,
        }
        code = commands[args.command](args)
    except ConfigError as exc:
        print(f"codemode-gateway: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except GatewayError as exc:
        print(f"codemode-gateway: {exc}", file=sys.stderr)
        code = EXIT_FAILED
    sys.exit(code)
