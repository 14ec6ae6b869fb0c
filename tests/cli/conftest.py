"""The command server a CLI test module shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cli.command import Commands


@pytest.fixture(scope="module")
def commands() -> Iterator[Commands]:
    """One command server per test module: its teardown, and so its CPU, falls in the module's last test."""
    server = Commands()
    try:
        yield server
    finally:
        server.close()
