"""The `codemode-gateway` command line."""

from gateway.cli._main import main

__all__ = ("main",)
