"""Shared fixtures: one loaded Sandbox per session (loading compiles or maps the component once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway import Sandbox, SandboxLimits


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """A sandbox with the default limits, shared by the tests that do not change them."""
    with Sandbox(SandboxLimits()) as loaded:
        yield loaded
