"""The `codemode-gateway` command line: arguments are parsed, and refused, before any command's module
(and the wings it needs: the SDK, the sandbox, the search model) is imported."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager

from gateway.cli._arguments import (
    add_http_arguments,
    add_reload_arguments,
    add_sandbox_test_arguments,
    add_search_eval_arguments,
    add_serve_reload_arguments,
)
from gateway.cli._children_args import parse_children, split_children
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_USAGE
from gateway.cli._logging import DEFAULT_LEVEL, configure_logging, quiet_sdk_parse_errors
from gateway.cli._terminal import terminal_output
from gateway.errors import ConfigError, GatewayError
from gateway.shared import PACKAGE_NAME, leaf_error, package_version

__all__ = ["main"]


class _Version(argparse.Action):
    """`--version`: this package, the wasmtime it runs on, and the sandbox component it ships."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the versions and the component's sha256")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        # The sandbox wing, imported for this flag alone: no other parse should wait for it.
        from gateway.sandbox.component import COMPONENT_PATH, WASMTIME_VERSION, component_sha256

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
        help="DEBUG, INFO, NOTICE (the default, or $CODEMODE_LOG_LEVEL), WARNING, ERROR",
    )
    parser = argparse.ArgumentParser(
        prog="codemode-gateway", description="A code-mode MCP gateway.", parents=[common]
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        epilog = _CHILDREN_EPILOG if name in _TAKES_CHILDREN else None
        return commands.add_parser(name, help=help, parents=[common], epilog=epilog)

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


_TAKES_CHILDREN = ("serve", "check", "exec")
_CHILDREN_EPILOG = (
    "Children may follow, after `--`: -- NAME [--transport stdio|http] COMMAND ARGS... -- NAME ... "
    "(an http child: NAME --transport http URL [-H 'Name: value']...). They join the config file's "
    "children and replace its entry of the same name; `${VAR}` is expanded from the environment."
)
_STARTS_CHILDREN = ("serve", "check", "exec", "lock", "search-eval")

Command = Callable[[argparse.Namespace], int]


def _command(name: str) -> Command:
    """The command's function: its module, and the wings that module needs, are imported only now."""
    match name:
        case "serve":
            from gateway.cli._serve import serve_command

            return serve_command
        case "exec":
            from gateway.cli._exec import exec_command

            return exec_command
        case "precompile":
            from gateway.cli._precompile import precompile_command

            return precompile_command
        case "check":
            from gateway.cli._check import check_command

            return check_command
        case "lock":
            from gateway.cli._lock import lock_command

            return lock_command
        case "audit":
            from gateway.cli._audit import audit_command

            return audit_command
        case "schema":
            from gateway.cli._schema import schema_command

            return schema_command
        case "reload":
            from gateway.cli._reload import reload_command

            return reload_command
        case "sandbox-test":
            from gateway.cli._sandbox_test import sandbox_test_command

            return sandbox_test_command
        case _:
            from gateway.cli._search_eval import search_eval_command

            return search_eval_command


@contextmanager
def _collection_paused() -> Generator[None]:
    """Importing builds thousands of classes and frees nothing, so collections in between only cost time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `codemode-gateway` console script."""
    own, children = split_children(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(own)
    if args.command is None:
        args = parser.parse_args([*own, "serve"])
    if children is not None and args.command not in _TAKES_CHILDREN:
        parser.error(f"children after '--' are taken by {', '.join(_TAKES_CHILDREN)}, not by {args.command}")
    configure_logging(
        getattr(args, "log_level", None) or os.environ.get("CODEMODE_LOG_LEVEL") or DEFAULT_LEVEL
    )
    # serve's stdout is the MCP protocol over stdio; every other command prints for a person.
    with terminal_output(stdout=args.command != "serve"):
        code = _run(args, children)
    sys.exit(code)


def _run(args: argparse.Namespace, children: list[str] | None) -> int:
    try:
        args.children = parse_children(children) if children is not None else None
        with _collection_paused():
            command = _command(args.command)
            if args.command in _STARTS_CHILDREN:
                quiet_sdk_parse_errors()
        # The process's tuning, here alone: what the import built lives as long as the process, so no
        # collection needs to walk it again (`serve` freezes once more when the gateway has started).
        gc.freeze()
        code = command(args)
    except GatewayError as exc:
        code = _report(exc)
    except BaseExceptionGroup as group:
        # `serve` starts the gateway inside a task group, which wraps what its start raised (a
        # malformed lockfile, an audit log that cannot be opened): the same one line, no traceback.
        error = leaf_error(group)
        if not isinstance(error, GatewayError):
            raise
        code = _report(error)
    return code


def _report(error: GatewayError) -> int:
    print(f"codemode-gateway: {error}", file=sys.stderr)
    return EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILED
