"""The hardened engine, the component's imports, and the precompiled-artifact cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import wasmtime

from gateway.sandbox._engine import COMPONENT_PATH, default_cache_dir, load_component, make_engine
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


def test_the_engine_fingerprint_changes_with_its_configuration() -> None:
    assert make_engine(1 << 20)[1] != make_engine(2 << 20)[1]


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


def test_a_corrupt_artifact_is_detected_and_rebuilt(warm_cache: Path, tmp_path: Path) -> None:
    engine, fingerprint = make_engine(STACK)
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    artifact = next(cache.glob("*.cwasm"))
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: deserialising this would run wrong native code
    artifact.write_bytes(bytes(data))
    reloaded = load_component(engine, fingerprint, cache_dir=cache)
    assert reloaded.compiled is True
    assert load_component(engine, fingerprint, cache_dir=cache).compiled is False


def test_an_artifact_wasmtime_rejects_is_rebuilt_even_when_its_checksum_matches(
    warm_cache: Path, tmp_path: Path
) -> None:
    import hashlib

    engine, fingerprint = make_engine(STACK)
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    artifact = next(cache.glob("*.cwasm"))
    artifact.write_bytes(b"not an artifact")
    Path(str(artifact) + ".sha256").write_text(hashlib.sha256(b"not an artifact").hexdigest())
    assert load_component(engine, fingerprint, cache_dir=cache).compiled is True


def test_a_missing_component_says_how_to_build_it(tmp_path: Path) -> None:
    from gateway import SandboxUnavailable

    engine, fingerprint = make_engine(STACK)
    with pytest.raises(SandboxUnavailable, match="make setup"):
        load_component(engine, fingerprint, path=tmp_path / "absent.wasm")


def test_the_cache_dir_can_be_set_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CODEMODE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_the_default_component_is_the_build_output() -> None:
    assert COMPONENT_PATH.name == "sandbox.wasm"
    assert COMPONENT_PATH.exists()
    assert isinstance(make_engine(STACK)[0], wasmtime.Engine)
