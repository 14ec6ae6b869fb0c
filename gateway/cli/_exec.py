"""`codemode-gateway exec`: run one snippet and print its outcome, with the config's children or none."""

from __future__ import annotations

import argparse
import sys

import anyio

from gateway.calls import Gateway
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.config import GatewayConfig, find_config_file
from gateway.errors import ConfigError
from gateway.sandbox import Sandbox
from gateway.sandbox.result import ExecutionResult

__all__ = ["exec_command"]


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


def exec_command(args: argparse.Namespace) -> int:
    """`exec`: run one snippet; with children (a config's, or after `--`), through a gateway over them."""
    code = _read_source(args)
    config = load_config_for_cli(args.config, args.children)
    if (find_config_file(args.config) is not None or args.children) and config.mcp_servers:
        result = anyio.run(_through_gateway, config, code, args.timeout)
    else:
        # No config named: the bare sandbox, at once, without connecting the built-in children.
        with Sandbox(config.sandbox) as sandbox:
            result = anyio.run(lambda: sandbox.execute(code, timeout=args.timeout))
    if args.json:
        print(result.model_dump_json())
    else:
        _print_human(result)
    return EXIT_OK if result.ok else EXIT_FAILED


async def _through_gateway(config: GatewayConfig, code: str, timeout: float | None) -> ExecutionResult:
    async with Gateway(config) as gateway:
        return await gateway.execute_code(code, timeout)
