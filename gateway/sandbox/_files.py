"""The built component's file, its sha256, and where compiled artifacts are cached: paths and hashes
only, so naming them (`--version`, the execution store's directory) loads no wasm runtime."""

from __future__ import annotations

import hashlib
import os
from importlib.metadata import version
from pathlib import Path

import platformdirs

__all__ = [
    "COMPONENT_PATH",
    "WASMTIME_VERSION",
    "component_sha256",
    "default_cache_dir",
    "file_sha256",
]

PACKAGED_COMPONENT = Path(__file__).resolve().parent / "component" / "sandbox.wasm"
"""Where a wheel ships the built component (setup.py puts it there)."""
SOURCE_COMPONENT = Path(__file__).resolve().parents[2] / "runtime-wasm" / "build" / "sandbox.wasm"
"""Where `make setup` builds it in a clone, which an editable install runs from."""
COMPONENT_PATH = PACKAGED_COMPONENT if PACKAGED_COMPONENT.exists() else SOURCE_COMPONENT
WASMTIME_VERSION = version("wasmtime")


def default_cache_dir() -> Path:
    """Where precompiled artifacts live: `CODEMODE_CACHE_DIR`, else the user's cache directory."""
    override = os.environ.get("CODEMODE_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("codemode-gateway"))


def file_sha256(path: Path) -> str:
    """The sha256 of the file at `path`, hashed."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def component_sha256(path: Path = COMPONENT_PATH) -> str:
    """The component's sha256: the build's record of it when that is newer than the file, else hashed."""
    recorded = path.with_name(path.name + ".sha256")
    try:
        if recorded.stat().st_mtime_ns >= path.stat().st_mtime_ns:
            digest = recorded.read_text().strip()
            if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
                return digest
    except OSError:
        pass
    return file_sha256(path)
