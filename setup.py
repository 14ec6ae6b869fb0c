"""Builds the sandbox component into the wheel; everything else about the package is in pyproject.toml.

A wheel ships `gateway/sandbox/component/sandbox.wasm` (with its sha256 and the hash of the inputs it
was built from), so an installed gateway needs no compiler and no componentize-py. An editable
install is left alone: it finds the build under `runtime-wasm/build/` (`make setup` writes it).
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
BUILT = ROOT / "runtime-wasm" / "build"
SHIPPED = ("sandbox.wasm", "sandbox.wasm.sha256", "inputs.sha256")


class BuildPyWithComponent(build_py):
    """`build_py`, then the sandbox component (built when its inputs changed) copied into the package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        subprocess.run([sys.executable, str(BUILD_SCRIPT)], check=True)
        target = Path(self.build_lib) / "gateway" / "sandbox" / "component"
        target.mkdir(parents=True, exist_ok=True)
        for name in SHIPPED:
            shutil.copyfile(BUILT / name, target / name)


setup(cmdclass={"build_py": BuildPyWithComponent})
