"""The installed package's name and version, as the gateway reports itself to clients and children."""

from __future__ import annotations

from functools import cache
from importlib import metadata

__all__ = ["PACKAGE_NAME", "package_version"]

PACKAGE_NAME = "codemode-gateway"


@cache
def package_version() -> str:
    """The installed version, or "0" when running from a tree that was never installed."""
    try:
        return metadata.version(PACKAGE_NAME)
    except metadata.PackageNotFoundError:
        return "0"
