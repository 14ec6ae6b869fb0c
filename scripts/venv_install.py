"""Install requirements into the venv with uv, reading the package indexes pip is configured with.

`python scripts/venv_install.py [--python PYTHON] ARGS...` runs `uv pip install --python PYTHON ARGS...`
(PYTHON: this python unless given) with the uv beside this python (make setup installs it there with
pip) and the index URLs, find-links, constraints and CA bundle of `pip config list` (uv does not read
pip.conf), so both see the same packages.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

# pip's option (as `pip config list` names it, after the section) -> uv's flag; a list of values
# (whitespace-separated, as pip reads them) gives one flag per value.
_FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def pip_settings() -> dict[str, list[str]]:
    """pip's configured options (files and PIP_* variables), later sources overriding earlier ones."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    settings: dict[str, list[str]] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        option = key.rpartition(".")[2]
        settings[option] = shlex.split(value.strip().strip("'\""))
    return settings


def uv_command(uv: Path, python: str, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """uv's install command (into `python`'s environment) and its environment for `args`, on pip's indexes."""
    settings = pip_settings()
    command = [str(uv), "pip", "install", "--quiet", "--python", python]
    for option, flag in _FLAGS.items():
        for value in settings.get(option, []):
            command += [flag, value]
    # pip takes the best version across every index; uv's default trusts only the first that has a name.
    command += ["--index-strategy", "unsafe-best-match", *args]
    env = dict(os.environ)
    if settings.get("cert"):
        env.setdefault("SSL_CERT_FILE", settings["cert"][0])
    return command, env


def main(args: list[str]) -> int:
    """Install `args` with the uv beside this python (into `--python PYTHON`'s environment if given)."""
    python = sys.executable
    if args[:1] == ["--python"]:
        python, args = args[1], args[2:]
    command, env = uv_command(Path(sys.executable).with_name("uv"), python, args)
    return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
