"""The `codemode-gateway` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

import anyio

from gateway._logging import configure_logging
from gateway._version import PACKAGE_NAME, package_version
from gateway.cli._audit import audit_command
from gateway.cli._check import check_command
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from gateway.config import (
    config_json_schema,
    load_config,
)
from gateway.errors import ConfigError, GatewayError
from gateway.escape import add_sandbox_test_arguments, run_sandbox_test
from gateway.sandbox import COMPONENT_PATH, WASMTIME_VERSION, ExecutionResult, Sandbox, component_sha256
from gateway.server import run_stdio

__all__ = ["main"]


class _Version(argparse.Action):
    """`--version`: this package, the wasmtime it runs on, and the sandbox component it ships."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the versions and the component's sha256")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        try:
            component = component_sha256()
        except OSError:
            component = f"missing ({COMPONENT_PATH})"
        print(f"{PACKAGE_NAME} {package_version()}")
        print(f"wasmtime {WASMTIME_VERSION}")
        print(f"sandbox component sha256 {component}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codemode-gateway", description="A code-mode MCP gateway.")
    parser.add_argument("--version", action=_Version)
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
            "check": check_command,
            "audit": audit_command,
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
