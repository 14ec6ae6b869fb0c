"""The hardened wasmtime Engine and the cached, precompiled sandbox component."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import wasmtime
from wasmtime.component import Component

from gateway.errors import SandboxUnavailable
from gateway.sandbox._files import (
    COMPONENT_PATH,
    WASMTIME_VERSION,
    component_sha256,
    default_cache_dir,
    file_sha256,
)
from gateway.sandbox._pooling import PoolSize, use_pooling

__all__ = [
    "COMPONENT_PATH",
    "WASMTIME_VERSION",
    "LoadedComponent",
    "component_sha256",
    "default_cache_dir",
    "load_artifact",
    "load_component",
    "make_engine",
]

log = logging.getLogger("gateway.sandbox")

# An artifact no install has loaded for this long is deleted when another is written: each is large.
UNUSED_ARTIFACT_SECONDS = 30 * 86400


# Fuel and epochs bound CPU and wall time; every proposal the guest does not use is off. Compiled code
# depends on these, so they make the artifact cache's key; the stack and the pool's sizes do not, and
# wasmtime itself refuses an artifact built under settings its code depends on (then we recompile).
_CODEGEN_SETTINGS: dict[str, object] = {
    "consume_fuel": True,
    "epoch_interruption": True,
    "wasm_threads": False,
    "shared_memory": False,
    "wasm_gc": False,
    "wasm_function_references": False,
    "wasm_exceptions": False,
    "wasm_memory64": False,
    "wasm_stack_switching": False,
    "wasm_tail_call": False,
    "cranelift_opt_level": "speed",
}


def make_engine(max_wasm_stack: int, pool: PoolSize | None = None) -> tuple[wasmtime.Engine, str]:
    """A hardened engine and a fingerprint of what its compiled code depends on (part of the
    artifact cache key); with `pool`, it allocates instances from a pool of that size (`_pooling.py`)."""
    config = wasmtime.Config()
    for name, value in _CODEGEN_SETTINGS.items():
        setattr(config, name, value)
    config.max_wasm_stack = max_wasm_stack
    if pool is not None:
        use_pooling(config, pool)
    return wasmtime.Engine(config), json.dumps(_CODEGEN_SETTINGS, sort_keys=True)


@dataclass(frozen=True)
class LoadedComponent:
    component: Component
    sha256: str
    artifact: Path
    compiled: bool  # whether this load had to compile (cache miss, stale or corrupt entry)


def _prune_unused(cache: Path, now: float) -> None:
    # Every artifact's name is its full key, so two installs (or checkouts) sharing this cache never
    # collide; each touches its artifact when it loads it, so only the long unused ones go.
    for artifact in cache.glob("sandbox-*.cwasm"):
        try:
            if now - artifact.stat().st_mtime > UNUSED_ARTIFACT_SECONDS:
                artifact.unlink(missing_ok=True)
                artifact.with_suffix(".cwasm.sha256").unlink(missing_ok=True)
        except OSError:  # another process pruned it meanwhile
            continue


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _untrusted(path: Path) -> str | None:
    """Why `path` may have been written by someone else than this user or root; None if it cannot."""
    info = path.stat()
    if info.st_uid not in (os.geteuid(), 0):
        return f"owned by uid {info.st_uid}"
    if info.st_mode & 0o022:
        return f"writable by group or others (mode {info.st_mode & 0o777:o})"
    return None


def _load_cached(engine: wasmtime.Engine, artifact: Path, checksum: Path) -> Component | None:
    if not (artifact.exists() and checksum.exists()):
        return None
    # An artifact is native code: one that another user could have written is never loaded.
    for path in (artifact.parent, artifact, checksum):
        if (reason := _untrusted(path)) is not None:
            log.warning(
                "cached artifact not trusted, recompiling", extra={"path": str(path), "reason": reason}
            )
            return None
    # Deserialising runs native code from the file: verify it is exactly what we wrote.
    if file_sha256(artifact) != checksum.read_text().strip():
        log.warning("artifact checksum mismatch, recompiling", extra={"artifact": str(artifact)})
        return None
    try:
        component = Component.deserialize_file(engine, str(artifact))
    except wasmtime.WasmtimeError as exc:
        log.warning(
            "artifact rejected by wasmtime, recompiling", extra={"artifact": str(artifact), "error": str(exc)}
        )
        return None
    with suppress(OSError):  # a read-only cache: nothing prunes it either
        os.utime(artifact)  # in use: pruning by another install leaves it alone
    return component


def load_artifact(engine: wasmtime.Engine, artifact: Path) -> Component | None:
    """The cached `artifact` deserialized into `engine`, checked again as at start (its owner, mode
    and checksum); None if it is gone or no longer what was written."""
    return _load_cached(engine, artifact, artifact.with_suffix(".cwasm.sha256"))


def load_component(
    engine: wasmtime.Engine,
    engine_fingerprint: str,
    *,
    path: Path | None = None,
    cache_dir: Path | None = None,
) -> LoadedComponent:
    """Load the sandbox component, compiling it once per (component, wasmtime, engine config)."""
    path = path or COMPONENT_PATH
    if not path.exists():
        raise SandboxUnavailable(
            f"the sandbox component is missing ({path}): an installed codemode-gateway ships it "
            "inside its wheel, so reinstall it; in a clone, `make setup` builds it"
        )
    component_sha = component_sha256(path)
    key = hashlib.sha256(f"{component_sha}\n{WASMTIME_VERSION}\n{engine_fingerprint}".encode()).hexdigest()
    cache = cache_dir or default_cache_dir()
    artifact = cache / f"sandbox-{component_sha[:12]}-{key[:24]}.cwasm"
    checksum = artifact.with_suffix(".cwasm.sha256")
    cached = _load_cached(engine, artifact, checksum)
    if cached is not None:
        return LoadedComponent(cached, component_sha, artifact, compiled=False)
    log.warning(
        "compiling the sandbox component for this machine: once per install and configuration, "
        "about 10-20 s here; later starts load it from the cache",
        extra={"cache": str(cache)},
    )
    started = time.monotonic()
    try:
        component = Component.from_file(engine, str(path))  # pyright: ignore[reportUnknownMemberType]
    except wasmtime.WasmtimeError as exc:
        raise SandboxUnavailable(f"sandbox component at {path} does not load: {exc}") from exc
    log.warning("compiled the sandbox component", extra={"seconds": round(time.monotonic() - started, 1)})
    data = bytes(component.serialize())
    try:
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)  # the artifacts in it (0600) are native code
        _write_atomically(artifact, data)
        _write_atomically(checksum, (hashlib.sha256(data).hexdigest() + "\n").encode())
        _prune_unused(cache, time.time())
    except OSError as exc:  # a read-only cache costs start-up time, not correctness
        log.warning("cannot write artifact cache", extra={"artifact": str(artifact), "error": str(exc)})
    return LoadedComponent(component, component_sha, artifact, compiled=True)
