"""The version the gateway reports: the installed package's, or "0" from a tree never installed."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import metadata

import pytest

from gateway.shared import _version
from gateway.shared._version import PACKAGE_NAME, package_version


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    package_version.cache_clear()
    yield
    package_version.cache_clear()


def test_the_installed_distributions_version_is_reported() -> None:
    assert package_version() == metadata.version(PACKAGE_NAME)


def test_a_tree_that_was_never_installed_reports_version_0(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_version.metadata, "version", not_installed)

    assert package_version() == "0"
