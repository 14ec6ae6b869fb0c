"""The process's logging: the gateway's and the SDK's loggers as JSON lines on stderr."""

from __future__ import annotations

import logging
import sys

from gateway.shared import JsonFormatter

__all__ = ["DEFAULT_LEVEL", "configure_logging", "quiet_sdk_parse_errors"]

DEFAULT_LEVEL = "NOTICE"
"""Warnings, errors, and the few notices an operator needs of a normal run (`gateway.shared.NOTICE`)."""


def configure_logging(level: str = "INFO") -> None:
    """Send the gateway's and the SDK's loggers to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("gateway", "mcp"):  # the SDK's own warnings are JSON lines too
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False


def quiet_sdk_parse_errors() -> None:
    """Keep the SDK's stdio client from logging each line a child prints that is not JSON-RPC."""
    # The children wing (and the SDK with it), imported only by the commands that start children.
    from gateway.children import QuietSdkParseErrors

    sdk_stdio = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, QuietSdkParseErrors) for f in sdk_stdio.filters):
        sdk_stdio.addFilter(QuietSdkParseErrors())
