"""The sandbox in force: loaded in the background, its failure reported each time, swapped by a reload."""

from __future__ import annotations

import sys
from typing import cast

import anyio
import pytest

import gateway.sandbox
from gateway.calls import _sandbox_loader
from gateway.calls._sandbox_loader import SandboxLoader
from gateway.errors import SandboxUnavailable
from gateway.sandbox import Sandbox
from gateway.sandbox.limits import SandboxLimits

pytestmark = pytest.mark.anyio


async def test_a_sandbox_that_failed_to_load_is_refused_on_every_execution_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(limits: SandboxLimits) -> Sandbox:
        raise RuntimeError("the component is missing")

    monkeypatch.setattr(_sandbox_loader, "new_sandbox", broken)
    loader = SandboxLoader()
    assert loader.state() == "loading"
    with anyio.fail_after(10):
        await loader.load(SandboxLimits())
        for _ in range(2):
            with pytest.raises(SandboxUnavailable, match="the component is missing"):
                await loader.get()
    assert loader.state() == "failed"
    assert loader.slot_usage() is None


async def test_a_wasm_runtime_that_cannot_be_imported_is_refused_naming_it_and_a_later_sandbox_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The face resolves Sandbox again, through an import that now fails as a broken install's would.
    monkeypatch.delattr(gateway.sandbox, "Sandbox", raising=False)
    monkeypatch.setitem(sys.modules, "gateway.sandbox._sandbox", None)
    loader = SandboxLoader()
    with anyio.fail_after(10):
        await loader.load(SandboxLimits())
        with pytest.raises(SandboxUnavailable, match=r"gateway\.sandbox\._sandbox"):
            await loader.get()
    assert loader.state() == "failed"
    replacement = cast("Sandbox", object())
    loader.swap(replacement)
    with anyio.fail_after(5):
        assert await loader.get() is replacement
    assert loader.state() == "ready"


async def test_a_swapped_sandbox_serves_from_then_on_and_the_one_it_replaces_is_returned() -> None:
    loader = SandboxLoader()
    first, second = cast("Sandbox", object()), cast("Sandbox", object())
    assert loader.swap(first) is None
    assert loader.swap(second) is first
    with anyio.fail_after(5):
        assert await loader.get() is second
    assert loader.state() == "ready"
