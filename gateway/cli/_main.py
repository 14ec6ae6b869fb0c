"""The `codemode-gateway` command line."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Sequence

from gateway.children import PARENT_ENV_VAR
from gateway.cli._audit import audit_command
from gateway.cli._check import check_command
from gateway.cli._children_args import parse_children, split_children
from gateway.cli._exec import exec_command
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from gateway.cli._http import add_http_arguments, http_settings
from gateway.cli._loading import load_config_for_cli
from gateway.cli._lock import lock_command
from gateway.cli._logging import configure_logging
from gateway.cli._reload import (
    add_reload_arguments,
    add_serve_reload_arguments,
    reload_command,
    reload_options,
)
from gateway.cli._sandbox_test import add_sandbox_test_arguments, sandbox_test_command
from gateway.cli._search_eval import add_search_eval_arguments, search_eval_command
from gateway.config import config_json_schema, config_reference
from gateway.errors import ConfigError, GatewayError
from gateway.sandbox import Sandbox
from gateway.sandbox.component import COMPONENT_PATH, WASMTIME_VERSION, component_sha256
from gateway.server import run_http, run_stdio
from gateway.shared import PACKAGE_NAME, leaf_error, package_version
from gateway.telemetry import traces_from_environment

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
    # --log-level is accepted before and after the command; SUPPRESS keeps an absent one absent.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level",
        default=argparse.SUPPRESS,
        help="DEBUG, INFO, WARNING (the default, or $CODEMODE_LOG_LEVEL), ERROR",
    )
    parser = argparse.ArgumentParser(
        prog="codemode-gateway", description="A code-mode MCP gateway.", parents=[common]
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help, parents=[common])

    serve = command("serve", "serve MCP over stdio (the default command), or over HTTP")
    serve.add_argument("--config", help="config file (default: $CODEMODE_CONFIG, else built-in)")
    add_http_arguments(serve)
    add_serve_reload_arguments(serve)

    add_reload_arguments(
        command("reload", "reload a serving gateway's config (the one started with that --pid-file)")
    )

    run = command("exec", "run one snippet in the sandbox and print its outcome")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("-c", dest="code", help="the snippet's source")
    source.add_argument("file", nargs="?", help="a file holding the snippet ('-' for stdin)")
    run.add_argument(
        "--config",
        help="config file (default: $CODEMODE_CONFIG); its children serve the snippet's tool calls",
    )
    run.add_argument("--timeout", type=float, help="wall-clock budget in seconds (capped by the config)")
    run.add_argument("--json", action="store_true", help="print the outcome as one JSON object")

    pre = command("precompile", "compile the sandbox component into the cache (done once)")
    pre.add_argument("--config", help="config file (its sandbox settings shape the engine)")

    check = command(
        "check", "validate the config, connect to every child, print their status and the lockfile's drift"
    )
    check.add_argument("--config", help="config file (default: $CODEMODE_CONFIG, else built-in)")

    lock = command("lock", "pin every child tool as reviewed: write the lockfile beside the config")
    lock.add_argument("--config", help="config file (default: $CODEMODE_CONFIG); its lockfile is beside it")

    audit = command("audit", "print the audit log (rotated files too, oldest first)")
    audit.add_argument("--config", help="config file whose `audit` section names the log")
    audit.add_argument("--path", help="the log file itself (instead of --config)")
    audit.add_argument("--since", help="only records at or after an ISO time or an age (30m, 1h, 2d)")
    audit.add_argument("--tool", help="only the tool calls whose tool matches this glob (github.*)")
    audit.add_argument("--principal", help="only the records of this caller (HTTP with `auth`)")
    audit.add_argument(
        "--issuer",
        help="only the records of callers this issuer vouched for: a JWT's iss, or codemode-gateway:tokens "
        "for static tokens (needed with --principal when two issuers name it)",
    )
    audit.add_argument("--json", action="store_true", help="print the records as JSON lines")

    add_sandbox_test_arguments(
        command("sandbox-test", "run the sandbox escape suite against the config's limits")
    )
    add_search_eval_arguments(
        command("search-eval", "measure how well search_docs finds tools for queries with known answers")
    )
    schema = command("schema", "print the config file's JSON Schema")
    schema.add_argument(
        "--markdown", action="store_true", help="print the config reference as Markdown instead"
    )
    return parser


def _precompile(args: argparse.Namespace) -> int:
    config = load_config_for_cli(args.config)
    started = time.monotonic()
    with Sandbox(config.sandbox.model_copy(update={"prewarm_instances": 0})) as sandbox:
        what = "compiled" if sandbox.compiled_on_load else "already cached"
    print(
        f"sandbox component {sandbox.component_sha256[:12]}: {what} ({time.monotonic() - started:.1f} s)",
        file=sys.stderr,
    )
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    parent = os.environ.get(PARENT_ENV_VAR)
    if parent:
        raise ConfigError(
            f"this gateway was started by another codemode-gateway ({PARENT_ENV_VAR}={parent}): an "
            "mcpServers entry of that gateway's config runs the gateway itself; remove that entry"
        )
    config = load_config_for_cli(args.config, args.children)
    http = http_settings(config, args)
    with traces_from_environment():  # spans exported as the OTEL_* variables say (the otel extra)
        if http is None:
            run_stdio(config, reload_options(args), started=gc.freeze)
        else:
            run_http(config, http, reload_options(args), started=gc.freeze)
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    if args.markdown:
        sys.stdout.write(config_reference())
        return EXIT_OK
    print(json.dumps(config_json_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK


_TAKES_CHILDREN = ("serve", "check", "exec")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `codemode-gateway` console script."""
    # The process's tuning, here alone: what the import built lives as long as the process, so no
    # collection needs to walk it again (`serve` freezes once more when the gateway has started).
    gc.freeze()
    own, children = split_children(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(own)
    if args.command is None:
        args = parser.parse_args([*own, "serve"])
    if children is not None and args.command not in _TAKES_CHILDREN:
        parser.error(f"children after '--' are taken by {', '.join(_TAKES_CHILDREN)}, not by {args.command}")
    configure_logging(getattr(args, "log_level", None) or os.environ.get("CODEMODE_LOG_LEVEL") or "WARNING")
    try:
        args.children = parse_children(children) if children is not None else None
        commands = {
            "serve": _serve,
            "exec": exec_command,
            "precompile": _precompile,
            "check": check_command,
            "lock": lock_command,
            "audit": audit_command,
            "schema": _schema,
            "reload": reload_command,
            "sandbox-test": sandbox_test_command,
            "search-eval": search_eval_command,
        }
        code = commands[args.command](args)
    except GatewayError as exc:
        code = _report(exc)
    except BaseExceptionGroup as group:
        # `serve` starts the gateway inside a task group, which wraps what its start raised (a
        # malformed lockfile, an audit log that cannot be opened): the same one line, no traceback.
        error = leaf_error(group)
        if not isinstance(error, GatewayError):
            raise
        code = _report(error)
    sys.exit(code)


def _report(error: GatewayError) -> int:
    print(f"codemode-gateway: {error}", file=sys.stderr)
    return EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILED
