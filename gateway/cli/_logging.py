"""The process's logging: the gateway's and the SDK's loggers as JSON lines on stderr."""

from __future__ import annotations

import logging
import sys

from gateway.children import QuietSdkParseErrors
from gateway.shared import JsonFormatter

__all__ = ["configure_logging"]


def configure_logging(level: str = "INFO") -> None:
    """Send the gateway's and the SDK's loggers to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("gateway", "mcp"):  # the SDK's own warnings are JSON lines too
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    sdk_stdio = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, QuietSdkParseErrors) for f in sdk_stdio.filters):
        sdk_stdio.addFilter(QuietSdkParseErrors())
