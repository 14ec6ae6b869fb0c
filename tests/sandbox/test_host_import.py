"""The `host.call` import as defined on the linker: our trampoline, and wasmtime-py's generic one."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from wasmtime.component import LinkerInstance, Variant

from gateway import Sandbox, SandboxLimits
from gateway.sandbox import _slots
from gateway.sandbox._host_import import HostFunction, fast_path_available
from gateway.testing import InProcessTools

pytestmark = pytest.mark.anyio

SNIPPET = """
results = [tools.m.echo(text=t) for t in ["", "plain", "é☃ 🙂", "x" * 70_000]]
try:
    tools.m.refuse()
except ToolError as exc:
    results.append(str(exc))
[len(r) if len(r) > 100 else r for r in results]
"""
EXPECTED = ["", "plain", "é☃ 🙂", 70_000, "no"]


def echo(text: str) -> str:
    return text


def refuse() -> None:
    from gateway.errors import ToolCallError

    raise ToolCallError("no")


def generic(instance: LinkerInstance, name: str, function: HostFunction) -> None:
    instance.add_func(name, function)


@pytest.fixture
def sandbox_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Sandbox]]:
    """A one-slot sandbox whose slots define the import with a given definer and host function."""
    made: list[Sandbox] = []

    def make(define: Any = None, host: HostFunction | None = None) -> Sandbox:
        if define is not None:
            monkeypatch.setattr(_slots, "define_host_call", define)
        if host is not None:
            monkeypatch.setattr(_slots, "host_call", host)
        sandbox = Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=0))
        made.append(sandbox)
        monkeypatch.undo()
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


def test_this_wasmtime_gets_the_trampoline_that_builds_no_types_per_call() -> None:
    # wasmtime is pinned; a version whose private bindings moved would fall back to `add_func`,
    # slower: this test says so when the pin is raised.
    assert fast_path_available()


async def test_the_trampoline_and_wasmtime_pys_own_give_the_guest_the_same_answers(
    sandbox_with: Callable[..., Sandbox],
) -> None:
    tools = InProcessTools({"m.echo": echo, "m.refuse": refuse})
    outcomes: list[Any] = []
    for sandbox in (sandbox_with(), sandbox_with(define=generic)):
        with anyio.fail_after(30):
            result = await sandbox.execute(SNIPPET, tool_caller=tools)
        assert result.ok, result.summary()
        outcomes.append(result.value)
    assert outcomes == [EXPECTED, EXPECTED]


async def test_a_host_function_that_breaks_its_contract_traps_the_guest_and_is_logged(
    sandbox_with: Callable[..., Sandbox], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(_store: object, name: str, args_json: str) -> Variant:
        raise KeyError(name)  # host_call itself never raises anything but a WasmtimeError

    sandbox = sandbox_with(host=broken)
    with caplog.at_level(logging.ERROR, logger="gateway.sandbox"), anyio.fail_after(30):
        result = await sandbox.execute("tools.m.echo(text='x')\n'not reached'")
    assert result.error is not None
    assert result.error.type == "GuestCrashed"
    assert result.value is None
    assert any(record.message == "host import trampoline failed" for record in caplog.records)
