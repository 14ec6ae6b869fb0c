"""Builds the sandbox component and the search model into the wheel; the rest is in pyproject.toml.

A wheel ships `gateway/sandbox/component/sandbox.wasm` (with its sha256 and the hash of the inputs it
was built from), so an installed gateway needs no compiler and no componentize-py, and
`gateway/catalog/model/` (all-MiniLM-L6-v2 as int8 ONNX and its tokenizer), so semantic search needs
no torch and nothing downloaded. An editable install is left alone: it finds the component under
`runtime-wasm/build/` and the model in `gateway/catalog/model/` (`make runtime` writes both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD_SCRIPT = ROOT / "runtime-wasm" / "build.py"
MODEL_SCRIPT = ROOT / "gateway" / "catalog" / "_minilm_build.py"
BUILT = ROOT / "runtime-wasm" / "build"
SHIPPED = ("sandbox.wasm", "sandbox.wasm.sha256", "inputs.sha256")


class BuildPyWithComponent(build_py):
    """`build_py`, then the sandbox component (built when its inputs changed) copied into the package,
    and the search model built into it (a copy from the cache when its inputs did not change)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        subprocess.run([sys.executable, str(BUILD_SCRIPT)], check=True)
        target = Path(self.build_lib) / "gateway" / "sandbox" / "component"
        target.mkdir(parents=True, exist_ok=True)
        for name in SHIPPED:
            shutil.copyfile(BUILT / name, target / name)
        model = Path(self.build_lib) / "gateway" / "catalog" / "model"
        # The script's cache (the user's build cache, as for the component) holds the clone's builds.
        subprocess.run([sys.executable, str(MODEL_SCRIPT), str(model)], check=True)


setup(cmdclass={"build_py": BuildPyWithComponent})
