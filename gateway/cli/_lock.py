"""`codemode-gateway lock`: write the lockfile that pins every child tool as the team reviewed it."""

from __future__ import annotations

import argparse
import sys

import anyio

from gateway.catalog.lockfile import lock_path, write_lock
from gateway.children import ChildState, ChildStatus
from gateway.cli._check import check_children, format_statuses
from gateway.cli._drift import config_lock, format_drift
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK
from gateway.cli._loading import load_config_for_cli
from gateway.errors import ConfigError

__all__ = ["lock_command"]


def _unlisted_reason(status: ChildStatus) -> str:
    reason = f"{status.state.value}: {status.error}" if status.error else status.state.value
    return f"error: {status.name} did not list its tools ({reason})"


def lock_command(args: argparse.Namespace) -> int:
    """`lock`: start every child once (lazy ones too) and write the digests of all their tools.

    Refuses while any child fails to list: a lockfile without a server would quarantine every one of
    its tools the next time it lists them.
    """
    config = load_config_for_cli(args.config)
    if config.config_file is None:
        raise ConfigError(
            "lock needs a config file (--config FILE or $CODEMODE_CONFIG): the lockfile is written beside it"
        )
    try:
        previous = config_lock(config)
    except ConfigError as exc:  # replaced below: writing it again is how a mangled lockfile is fixed
        print(f"warning: {exc}", file=sys.stderr)
        previous = None
    statuses, tools = anyio.run(check_children, config)
    unlisted = [status for status in statuses if status.state is not ChildState.READY]
    if unlisted:
        print(format_statuses(statuses))
        for status in unlisted:
            print(_unlisted_reason(status), file=sys.stderr)
        print(
            f"error: not locked ({lock_path(config.config_file)} is unchanged): fix those children, "
            "or remove them from the config, and lock again",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if previous is not None and (drift := previous.drift(tools, [s.name for s in statuses])):
        print(f"changes since the last lock ({len(drift)}):")
        print(format_drift(drift))
    lock = write_lock(config.config_file, tools)
    servers = len(lock.servers)
    print(
        f"locked {lock.tool_count} tool{'s' if lock.tool_count != 1 else ''} of {servers} "
        f"server{'s' if servers != 1 else ''} in {lock.path}; commit it beside the config"
    )
    return EXIT_OK
