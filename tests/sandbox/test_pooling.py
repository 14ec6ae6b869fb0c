"""wasmtime's pooling allocator: on with this wasmtime-py, off (and said) without it, never a limit."""

from __future__ import annotations

import logging
import resource
from types import SimpleNamespace

import pytest
import wasmtime

from gateway import Sandbox, SandboxLimits
from gateway.sandbox import _pooling, _slots
from gateway.sandbox._engine import make_engine
from gateway.sandbox._pooling import PoolSize, use_pooling
from gateway.sandbox._slots import POOL_MARGIN

STACK = SandboxLimits().max_wasm_stack_bytes
MEMORY = SandboxLimits().memory_bytes
KEEP = SandboxLimits().pool_keep_resident_bytes


def test_engines_allocate_from_a_pool_with_this_wasmtime_py() -> None:
    assert use_pooling(wasmtime.Config(), PoolSize(4, MEMORY, KEEP))


def test_a_wasmtime_py_without_the_setting_keeps_on_demand_allocation_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wasmtime, "_ffi", SimpleNamespace(), raising=False)
    monkeypatch.setattr(_pooling, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="gateway.sandbox"):
        assert not use_pooling(wasmtime.Config(), PoolSize(4, MEMORY, KEEP))
        assert not use_pooling(wasmtime.Config(), PoolSize(4, MEMORY, KEEP))
    said = [r for r in caplog.records if r.getMessage() == "no pooling allocator: fresh instances are slower"]
    assert len(said) == 1  # once per process, not per engine
    assert getattr(said[0], "why", None) == "this wasmtime-py exposes none"


def test_a_capped_address_space_keeps_on_demand_allocation(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (8 << 30, resource.RLIM_INFINITY))
    monkeypatch.setattr(_pooling, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="gateway.sandbox"):
        engine, _ = make_engine(STACK, PoolSize(4, MEMORY, KEEP))
    assert isinstance(engine, wasmtime.Engine)
    assert [getattr(r, "why", None) for r in caplog.records] == ["the address space is capped (ulimit -v)"]


def test_a_slot_runs_many_more_executions_than_its_pool_holds_instances() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=1)
    with Sandbox(limits) as sandbox:
        for n in range(4 * (limits.prewarm_instances + POOL_MARGIN)):
            result = sandbox.execute_sync(f"print({n})")
            assert result.ok, result.summary()
            assert result.stdout == f"{n}\n"


def test_the_pool_leaves_the_memory_limit_where_the_store_sets_it() -> None:
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=0, memory_bytes=64 << 20)
    with Sandbox(limits) as sandbox:
        result = sandbox.execute_sync("x = bytearray(200 * 1024 * 1024)")
        assert not result.ok
        assert result.error is not None
        assert result.error.type == "MemoryLimitExceeded"
        assert sandbox.execute_sync("print('still serving')").stdout == "still serving\n"


def test_a_config_can_turn_the_pool_off_for_less_idle_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    pools: list[PoolSize | None] = []

    def recording(max_wasm_stack: int, pool: PoolSize | None = None) -> tuple[wasmtime.Engine, str]:
        pools.append(pool)
        return make_engine(max_wasm_stack, pool)

    monkeypatch.setattr(_slots, "make_engine", recording)
    with Sandbox(SandboxLimits(max_concurrent_executions=2, pooling_allocator=False)) as sandbox:
        assert sandbox.execute_sync("print('on demand')").stdout == "on demand\n"
    with Sandbox(SandboxLimits(max_concurrent_executions=1, prewarm_instances=3)) as sandbox:
        assert sandbox.execute_sync("print('pooled')").stdout == "pooled\n"
    # One engine per slot used: the second slot of the first sandbox never ran, so it made none.
    assert pools == [None, PoolSize(3 + POOL_MARGIN, MEMORY, KEEP)]


def test_the_memory_a_pool_keeps_resident_per_instance_comes_from_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pools: list[PoolSize | None] = []

    def recording(max_wasm_stack: int, pool: PoolSize | None = None) -> tuple[wasmtime.Engine, str]:
        pools.append(pool)
        return make_engine(max_wasm_stack, pool)

    monkeypatch.setattr(_slots, "make_engine", recording)
    limits = SandboxLimits(max_concurrent_executions=1, prewarm_instances=0, pool_keep_resident_bytes=4 << 20)
    with Sandbox(limits) as sandbox:
        assert sandbox.execute_sync("print('kept')").stdout == "kept\n"
    assert pools == [PoolSize(POOL_MARGIN, MEMORY, 4 << 20)]
    assert PoolSize(POOL_MARGIN, MEMORY, 4 << 20).settings()["linear_memory_keep_resident"] == 4 << 20
