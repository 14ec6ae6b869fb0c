"""The component build: rebuilt only when its inputs change, never trusted when damaged."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("codemode_build", ROOT / "runtime-wasm" / "build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The build module pointed at a private copy of the inputs and a private build folder."""
    module = _load_build_module()
    shutil.copytree(ROOT / "guest", tmp_path / "guest", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "runtime-wasm" / "wit", tmp_path / "wit")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "GUEST_DIR", tmp_path / "guest")
    monkeypatch.setattr(module, "WIT_DIR", tmp_path / "wit")
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    monkeypatch.setattr(module, "BUILD_DIR", build_dir)
    monkeypatch.setenv("CODEMODE_BUILD_CACHE", str(tmp_path / "kept"))  # never the user's own cache
    monkeypatch.setattr(module, "COMPONENT", build_dir / "sandbox.wasm")
    monkeypatch.setattr(module, "COMPONENT_SHA", build_dir / "sandbox.wasm.sha256")
    monkeypatch.setattr(module, "INPUTS_SHA", build_dir / "inputs.sha256")
    monkeypatch.setattr(module, "BINDINGS_DIR", build_dir / "bindings")
    monkeypatch.setattr(module, "__file__", str(ROOT / "runtime-wasm" / "build.py"))
    return module


def _pretend_built(build: ModuleType, content: bytes = b"component") -> None:
    build.BINDINGS_DIR.mkdir(exist_ok=True)
    build.COMPONENT.write_bytes(content)
    build.COMPONENT_SHA.write_text(hashlib.sha256(content).hexdigest())
    build.INPUTS_SHA.write_text(build.inputs_hash())


def test_an_unchanged_build_is_current(build: ModuleType) -> None:
    _pretend_built(build)
    assert build.is_current(build.inputs_hash())


def test_editing_a_guest_source_makes_the_build_stale(build: ModuleType) -> None:
    _pretend_built(build)
    (build.GUEST_DIR / "_tools.py").write_text((build.GUEST_DIR / "_tools.py").read_text() + "\n# edit\n")
    assert not build.is_current(build.inputs_hash())


def test_editing_the_wit_world_makes_the_build_stale(build: ModuleType) -> None:
    _pretend_built(build)
    wit = next(build.WIT_DIR.glob("*.wit"))
    wit.write_text(wit.read_text() + "\n// edit\n")
    assert not build.is_current(build.inputs_hash())


def test_a_damaged_component_is_not_current(build: ModuleType) -> None:
    _pretend_built(build)
    build.COMPONENT.write_bytes(b"tampered")
    assert not build.is_current(build.inputs_hash())


def test_the_inputs_hash_covers_the_componentize_py_version(
    build: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = build.inputs_hash()
    monkeypatch.setattr(build.importlib.metadata, "version", lambda _name: "0.0.0-other")
    assert build.inputs_hash() != before


def test_builds_are_kept_in_the_users_cache_unless_the_variable_names_another(
    build: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert build.cache_dir() == tmp_path / "kept" / "sandbox"
    monkeypatch.delenv("CODEMODE_BUILD_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    assert build.cache_dir() == tmp_path / "user" / "codemode-gateway" / "build" / "sandbox"


def _never_componentize(*_args: str, cwd: str) -> None:
    raise AssertionError(f"componentize-py ran (in {cwd}): the kept build was not used")


def _fresh_tree(build: ModuleType) -> None:
    """The build folder as a new clone has it: empty."""
    shutil.rmtree(build.BUILD_DIR)
    build.BUILD_DIR.mkdir()


def test_a_new_tree_of_the_same_inputs_copies_the_kept_build_instead_of_building(
    build: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pretend_built(build, b"built once")
    assert build.build() is False  # current, and now kept
    _fresh_tree(build)
    monkeypatch.setattr(build, "_componentize_py", _never_componentize)
    assert build.build() is False
    assert build.COMPONENT.read_bytes() == b"built once"
    assert build.is_current(build.inputs_hash())


def test_a_damaged_kept_build_is_not_copied(build: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_built(build, b"built once")
    build.build()
    (build.cache_dir() / build.inputs_hash() / "sandbox.wasm").write_bytes(b"tampered")
    _fresh_tree(build)
    monkeypatch.setattr(build, "_componentize_py", _never_componentize)
    with pytest.raises(AssertionError, match="componentize-py ran"):
        build.build()
    assert not build.COMPONENT.exists()


def test_the_real_build_output_matches_its_recorded_hash() -> None:
    out = ROOT / "runtime-wasm" / "build"
    recorded = (out / "sandbox.wasm.sha256").read_text().strip()
    assert hashlib.sha256((out / "sandbox.wasm").read_bytes()).hexdigest() == recorded
    assert _load_build_module().is_current((out / "inputs.sha256").read_text().strip())
