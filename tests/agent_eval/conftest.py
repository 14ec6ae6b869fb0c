"""One built world of the default seed, shared by the agent evaluation's tests (it is read-only to them;
a test that changes a world copies it first)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.agent_eval.world import DEFAULT_SEED, Plan, build, plan


@pytest.fixture(scope="session")
def built_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The world of the default seed, built once."""
    directory = tmp_path_factory.mktemp("agent-eval") / "world"
    build(directory, DEFAULT_SEED)
    return directory


@pytest.fixture(scope="session")
def world_plan() -> Plan:
    """The plan of the default seed's world."""
    return plan(DEFAULT_SEED)


@pytest.fixture
def world_copy(built_world: Path, tmp_path: Path) -> Path:
    """A private copy of the built world, for a test that changes it."""
    return Path(shutil.copytree(built_world, tmp_path / "world", symlinks=True))
