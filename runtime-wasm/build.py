"""Build the sandbox component from guest/ with componentize-py, only when its inputs changed.

Writes runtime-wasm/build/sandbox.wasm, its sha256 (sandbox.wasm.sha256) and the hash of the
inputs it was built from (inputs.sha256). The inputs are the WIT world, every guest source,
this script and the exact componentize-py version: when their hash matches, nothing is done.
A build is also kept under `$CODEMODE_BUILD_CACHE/sandbox/<inputs hash>` (default
`~/.cache/codemode-gateway/build`, under `$XDG_CACHE_HOME` when set), so a second tree of the same
inputs (a wheel built from the sdist, another clone, the same clone after `make clean`) copies it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WIT_DIR = HERE / "wit"
GUEST_DIR = ROOT / "guest"
BUILD_DIR = HERE / "build"
COMPONENT = BUILD_DIR / "sandbox.wasm"
COMPONENT_SHA = BUILD_DIR / "sandbox.wasm.sha256"
INPUTS_SHA = BUILD_DIR / "inputs.sha256"
BINDINGS_DIR = BUILD_DIR / "bindings"  # for type checkers and editors; the build generates its own
WORLD = "sandbox"
APP_MODULE = "guest.main"
BUILD_CACHE_ENV = "CODEMODE_BUILD_CACHE"  # shared with setup.py's search model cache
OUTPUTS = (COMPONENT.name, COMPONENT_SHA.name, INPUTS_SHA.name, BINDINGS_DIR.name)


def _input_files() -> list[tuple[str, Path]]:
    """Every input with a stable label (its path inside its own folder), sorted."""
    files = [(f"wit/{p.relative_to(WIT_DIR)}", p) for p in WIT_DIR.rglob("*.wit")]
    files += [
        (f"guest/{p.relative_to(GUEST_DIR)}", p)
        for p in GUEST_DIR.rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    files.append(("runtime-wasm/build.py", Path(__file__).resolve()))
    return sorted(files)


def inputs_hash() -> str:
    """Hash of everything the component is built from, componentize-py's version included."""
    digest = hashlib.sha256()
    digest.update(f"componentize-py=={importlib.metadata.version('componentize-py')}\n".encode())
    for label, path in _input_files():
        digest.update(label.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def is_current(expected: str) -> bool:
    """Whether the built component exists, is intact and was built from these inputs."""
    if not (COMPONENT.exists() and COMPONENT_SHA.exists() and INPUTS_SHA.exists() and BINDINGS_DIR.exists()):
        return False
    if INPUTS_SHA.read_text().strip() != expected:
        return False
    return hashlib.sha256(COMPONENT.read_bytes()).hexdigest() == COMPONENT_SHA.read_text().strip()


def _componentize_py(*args: str, cwd: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    script = "import sys; from componentize_py import script; sys.exit(script())"
    cmd = [sys.executable, "-c", script, "--quiet", "-d", str(WIT_DIR), "-w", WORLD, *args]
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"componentize-py {args[0]} failed (exit {done.returncode}); see the output above")


def cache_dir() -> Path:
    """Where builds are kept by their inputs hash: the user's, shared by every clone of the same inputs."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(BUILD_CACHE_ENV) or user_cache / "codemode-gateway" / "build") / "sandbox"


def _copy_outputs(source: Path, target: Path) -> None:
    for name in OUTPUTS:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name)
        else:
            shutil.copyfile(source / name, target / name)


def _restore(expected: str) -> bool:
    """Copy a kept build of these inputs into the build directory; whether one was there."""
    kept = cache_dir() / expected
    if not all((kept / name).exists() for name in OUTPUTS):
        return False
    if (
        hashlib.sha256((kept / COMPONENT.name).read_bytes()).hexdigest()
        != (kept / COMPONENT_SHA.name).read_text().strip()
    ):
        return False
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(BINDINGS_DIR, ignore_errors=True)
    for name in (INPUTS_SHA.name, COMPONENT_SHA.name):  # stale until the component is in place
        (BUILD_DIR / name).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_DIR, prefix=".restore-") as tmp:
        _copy_outputs(kept, Path(tmp))
        os.replace(Path(tmp) / BINDINGS_DIR.name, BINDINGS_DIR)
        for name in (COMPONENT.name, COMPONENT_SHA.name, INPUTS_SHA.name):  # the inputs hash last
            os.replace(Path(tmp) / name, BUILD_DIR / name)
    print(f"copied {COMPONENT.relative_to(ROOT)} from {kept}", file=sys.stderr)
    return True


def _keep(expected: str) -> None:
    """Keep this build under its inputs hash (best effort: the build itself already succeeded)."""
    kept = cache_dir() / expected
    if kept.exists():
        return
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=kept.parent, prefix=".keep-") as tmp:
            (Path(tmp) / "build").mkdir()
            _copy_outputs(BUILD_DIR, Path(tmp) / "build")
            os.rename(Path(tmp) / "build", kept)
    except OSError as error:  # another build kept the same inputs first, or the cache is read-only
        print(f"not kept in {kept.parent}: {error}", file=sys.stderr)


def build(force: bool = False) -> bool:
    """Build the component if needed (or copy a kept build of the same inputs); return whether a build ran."""
    expected = inputs_hash()
    if not force and is_current(expected):
        _keep(expected)  # a clone built before builds were kept
        return False
    if not force and _restore(expected):
        return False
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="codemode-guest-") as tmp:
        # Only guest/ is on the build's python path: the snapshot holds nothing else of ours.
        shutil.copytree(GUEST_DIR, Path(tmp) / "guest", ignore=shutil.ignore_patterns("__pycache__"))
        out = Path(tmp) / "sandbox.wasm"
        started = time.monotonic()
        _componentize_py("componentize", "--stub-wasi", "-p", tmp, "-o", str(out), APP_MODULE, cwd=tmp)
        shutil.rmtree(BINDINGS_DIR, ignore_errors=True)
        _componentize_py("bindings", str(BINDINGS_DIR), cwd=tmp)
        data = out.read_bytes()
        tmp_component = COMPONENT.with_suffix(".wasm.tmp")
        tmp_component.write_bytes(data)
        os.replace(tmp_component, COMPONENT)
    COMPONENT_SHA.write_text(hashlib.sha256(data).hexdigest() + "\n")
    INPUTS_SHA.write_text(expected + "\n")
    _keep(expected)
    print(
        f"built {COMPONENT.relative_to(ROOT)} ({len(data) / 1e6:.1f} MB) "
        f"in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the sandbox component when its inputs changed.")
    parser.add_argument("--force", action="store_true", help="rebuild even when the inputs did not change")
    args = parser.parse_args()
    if not build(force=args.force):
        print(f"{COMPONENT.relative_to(ROOT)} is up to date", file=sys.stderr)


if __name__ == "__main__":
    main()
