"""The hardened engine, the component's imports, and the precompiled-artifact cache."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

import pytest
import wasmtime
from wasmtime.component import Component

from gateway import SandboxUnavailable
from gateway.sandbox._engine import (
    COMPONENT_PATH,
    UNUSED_ARTIFACT_SECONDS,
    default_cache_dir,
    load_artifact,
    load_component,
    make_engine,
)
from gateway.sandbox._pooling import PoolSize
from gateway.sandbox._sandbox import HOST_INTERFACE
from gateway.sandbox.limits import SandboxLimits

STACK = SandboxLimits().max_wasm_stack_bytes


def test_the_component_imports_nothing_but_the_host_interface() -> None:
    engine, _ = make_engine(STACK)
    loaded = load_component(engine, make_engine(STACK)[1])
    imports = set(loaded.component.type.imports(engine))
    assert imports == {HOST_INTERFACE}


def test_the_component_exports_run() -> None:
    engine, fingerprint = make_engine(STACK)
    exports = set(load_component(engine, fingerprint).component.type.exports(engine))
    assert "run" in exports


@pytest.mark.parametrize(
    "pool",
    [None, PoolSize(4, 64 << 20, 0), PoolSize(64, 4 << 30, 256 << 20)],
    ids=["no pool", "small pool", "large pool keeping memory resident"],
)
def test_one_artifact_serves_every_stack_and_pool_size_without_compiling_again(
    warm_cache: Path, pool: PoolSize | None
) -> None:
    for stack in (256 << 10, STACK, 2 << 20):
        engine, fingerprint = make_engine(stack, pool)
        loaded = load_component(engine, fingerprint, cache_dir=warm_cache)
        assert loaded.compiled is False
        assert "run" in set(loaded.component.type.exports(engine))


def test_wasmtime_refuses_an_artifact_compiled_under_settings_its_code_depends_on(warm_cache: Path) -> None:
    # What keeps a lean cache key safe: a setting the key left out that compiled code depends on is
    # still checked by wasmtime, and an artifact it refuses is compiled again (tested below).
    config = wasmtime.Config()
    config.consume_fuel = True  # no epoch checks
    [artifact] = warm_cache.glob("*.cwasm")
    with pytest.raises(wasmtime.WasmtimeError, match="epoch interruption"):
        Component.deserialize_file(wasmtime.Engine(config), str(artifact))


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cache holding a copy of the default cache's artifact for this engine."""
    engine, fingerprint = make_engine(STACK)
    artifact = load_component(engine, fingerprint).artifact
    cache = tmp_path_factory.mktemp("cache")
    for suffix in ("", ".sha256"):
        source = Path(str(artifact) + suffix)
        shutil.copy(source, cache / source.name)
    return cache


def test_a_cached_artifact_is_loaded_without_compiling(warm_cache: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    assert load_component(engine, fingerprint, cache_dir=warm_cache).compiled is False


def test_a_missing_component_says_how_to_get_it_for_an_install_and_a_clone(tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    with pytest.raises(SandboxUnavailable, match="reinstall it; in a clone, `make setup` builds it"):
        load_component(engine, fingerprint, path=tmp_path / "absent.wasm")


def _other_component(tmp_path: Path) -> Path:
    """A different (empty) component: another install's build, as far as the cache can tell."""
    path = tmp_path / "other" / "sandbox.wasm"
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(wasmtime.wat2wasm("(component)")))
    return path


# The rebuild tests cache a small component's artifact: what they check does not depend on the component,
# and the sandbox's own takes far longer to compile again.
def test_a_corrupt_artifact_is_detected_and_rebuilt(tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    component, cache = _other_component(tmp_path), tmp_path / "cache"
    artifact = load_component(engine, fingerprint, path=component, cache_dir=cache).artifact
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: deserialising this would run wrong native code
    artifact.write_bytes(bytes(data))
    reloaded = load_component(engine, fingerprint, path=component, cache_dir=cache)
    assert reloaded.compiled is True
    assert load_component(engine, fingerprint, path=component, cache_dir=cache).compiled is False


def test_an_artifact_changed_after_start_is_not_loaded_into_a_slot_made_later(tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    component, cache = _other_component(tmp_path), tmp_path / "cache"
    artifact = load_component(engine, fingerprint, path=component, cache_dir=cache).artifact
    later, _ = make_engine(STACK)
    assert load_artifact(later, artifact) is not None
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 0xFF  # changed while the gateway ran, before a second slot needed an engine
    artifact.write_bytes(bytes(data))
    assert load_artifact(later, artifact) is None


def test_an_artifact_wasmtime_rejects_is_rebuilt_even_when_its_checksum_matches(tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    component, cache = _other_component(tmp_path), tmp_path / "cache"
    artifact = load_component(engine, fingerprint, path=component, cache_dir=cache).artifact
    artifact.write_bytes(b"not an artifact")
    Path(str(artifact) + ".sha256").write_text(hashlib.sha256(b"not an artifact").hexdigest())
    assert load_component(engine, fingerprint, path=component, cache_dir=cache).compiled is True


def test_installs_sharing_a_cache_never_delete_each_others_artifacts(
    warm_cache: Path, tmp_path: Path
) -> None:
    engine, fingerprint = make_engine(STACK)
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    other = _other_component(tmp_path)
    assert load_component(engine, fingerprint, path=other, cache_dir=cache).compiled is True
    assert load_component(engine, fingerprint, cache_dir=cache).compiled is False
    assert load_component(engine, fingerprint, path=other, cache_dir=cache).compiled is False
    assert len(list(cache.glob("*.cwasm"))) == 2


def test_an_artifact_unused_for_a_month_is_pruned_when_another_is_written(
    warm_cache: Path, tmp_path: Path
) -> None:
    engine, fingerprint = make_engine(STACK)
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    [stale] = cache.glob("*.cwasm")
    long_ago = time.time() - UNUSED_ARTIFACT_SECONDS - 3600
    os.utime(stale, (long_ago, long_ago))
    load_component(engine, fingerprint, path=_other_component(tmp_path), cache_dir=cache)
    assert not stale.exists()
    assert not Path(str(stale) + ".sha256").exists()
    assert len(list(cache.glob("*.cwasm"))) == 1


def test_loading_an_artifact_marks_it_used(warm_cache: Path, tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    [artifact] = cache.glob("*.cwasm")
    os.utime(artifact, (1, 1))
    load_component(engine, fingerprint, cache_dir=cache)
    assert artifact.stat().st_mtime > time.time() - 60


def test_compiling_says_so_and_how_long_it_took(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine, fingerprint = make_engine(STACK)
    with caplog.at_level(logging.WARNING, logger="gateway.sandbox"):
        load_component(engine, fingerprint, path=_other_component(tmp_path), cache_dir=tmp_path / "c")
        load_component(
            engine, fingerprint, path=_other_component(tmp_path / "again"), cache_dir=tmp_path / "c"
        )
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("compiling the sandbox component")
    assert messages[1] == "compiled the sandbox component"
    assert isinstance(caplog.records[1].__dict__["seconds"], float)
    assert len(messages) == 2  # the second load came from the cache


def test_the_cache_dir_can_be_set_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CODEMODE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_the_default_component_is_the_build_output() -> None:
    assert COMPONENT_PATH.name == "sandbox.wasm"
    assert COMPONENT_PATH.exists()
    assert isinstance(make_engine(STACK)[0], wasmtime.Engine)


def test_the_cache_is_private_to_its_user(tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    loaded = load_component(engine, fingerprint, path=_other_component(tmp_path), cache_dir=tmp_path / "c")
    assert (tmp_path / "c").stat().st_mode & 0o777 == 0o700
    assert loaded.artifact.stat().st_mode & 0o777 == 0o600
    assert Path(str(loaded.artifact) + ".sha256").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("writable", ["artifact", "checksum", "directory"])
def test_an_artifact_others_could_have_written_is_never_loaded(
    tmp_path: Path, writable: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine, fingerprint = make_engine(STACK)
    component, cache = _other_component(tmp_path), tmp_path / "c"
    artifact = load_component(engine, fingerprint, path=component, cache_dir=cache).artifact
    opened = {"artifact": artifact, "checksum": Path(str(artifact) + ".sha256"), "directory": cache}[writable]
    opened.chmod(opened.stat().st_mode | 0o022)
    with caplog.at_level(logging.WARNING, logger="gateway.sandbox"):
        assert load_component(engine, fingerprint, path=component, cache_dir=cache).compiled is True
    refused = [
        record
        for record in caplog.records
        if record.getMessage() == "cached artifact not trusted, recompiling"
    ]
    assert refused[0].__dict__["reason"].startswith("writable by group or others")
