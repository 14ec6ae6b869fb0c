"""Imports the command line once, then runs each command it is sent in a fork of itself.

Run as a script by `tests/cli/command.py`. One request per line on stdin, a JSON object: `argv` (the
arguments after `codemode-gateway`), `env` (the whole environment), `cwd`, and `stdin` (text, or null for an
empty one). One reply per line on stdout: `code`, `stdout`, `stderr`. The fork runs `gateway.cli.main`
as `python -m gateway` would, in a process of its own with those streams, environment and directory;
what it does not repeat is the interpreter's start and the imports, which cost most of a command's CPU.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

# The commands whose module is imported before the fork (a test module's server imports only those it
# runs). Not `sandbox-test` nor `search-eval`: their wings stay out, as they do for the other commands.
PRELOADED = ("serve", "exec", "precompile", "check", "lock", "audit", "schema", "reload")
ENTRY_POINT = "gateway/__main__.py"


def _exit_code(stopped: SystemExit) -> int:
    """What the interpreter makes of `sys.exit(arg)`: None is 0, a number itself, anything else 1."""
    if stopped.code is None:
        return 0
    if isinstance(stopped.code, int):
        return stopped.code
    print(stopped.code, file=sys.stderr)
    return 1


def _exit_code_of(run: Callable[[], object]) -> int:
    """The exit code the interpreter gives `run` as its main program."""
    try:
        run()
    except SystemExit as stopped:
        return _exit_code(stopped)
    except BaseException:  # as the interpreter reports an uncaught exception
        traceback.print_exc()
        return 1
    return 0


def _command(argv: list[str]) -> int:
    from gateway.cli import main

    sys.argv = [ENTRY_POINT, *argv]
    return _exit_code_of(main)


def _script(argv: list[str]) -> int:
    """Run `python SCRIPT ARGS` (`argv`) as the interpreter would: the script as `__main__`, its
    directory first on the path."""
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    return _exit_code_of(lambda: runpy.run_path(argv[0], run_name="__main__"))


def enter(request: dict[str, Any], streams: Sequence[int]) -> None:
    """In a forked process: the request's directory (if it names one), its environment, and `streams` as
    stdin, stdout and stderr (their own descriptors closed)."""
    if request["cwd"] is not None:
        os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for source, target in zip(streams, (0, 1, 2), strict=True):
        os.dup2(source, target)
        os.close(source)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115  (the process's own stdin)


def run_forked(
    request: dict[str, Any], streams: Sequence[int], prepare: Callable[[], None] | None = None
) -> NoReturn:
    """In a forked process: `enter` the request, `prepare` (if given), run its command (or with
    `script`, a Python script: its argv), exit with its code."""
    code = 1
    try:
        enter(request, streams)
        if prepare is not None:
            prepare()
        code = _script(request["argv"]) if request.get("script") else _command(request["argv"])
        atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _run(request: dict[str, Any]) -> dict[str, Any]:
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        stdin.write((request["stdin"] or "").encode())
        stdin.seek(0)
        pid = os.fork()
        if pid == 0:
            run_forked(request, (stdin.fileno(), stdout.fileno(), stderr.fileno()))
        _, status = os.waitpid(pid, 0)
        stdout.seek(0)
        stderr.seek(0)
        return {
            "code": os.waitstatus_to_exitcode(status),
            "stdout": stdout.read().decode(errors="replace"),
            "stderr": stderr.read().decode(errors="replace"),
        }


def _preload(argv: list[str]) -> None:
    """Import the command's module here, once, so that every fork of this process shares it."""
    from gateway.cli import _main

    names = [name for name in PRELOADED if name in argv]
    if all(name in _loaded for name in names):
        return
    gc.disable()
    for name in names:
        _main._command(name)  # pyright: ignore[reportPrivateUsage]
        _loaded.add(name)
    gc.enable()
    gc.freeze()  # what the imports built stays shared with each fork instead of being copied


_loaded: set[str] = set()


def main() -> None:
    sys.path.pop(0)  # this script's directory: `python -m gateway` has no such entry
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        _preload(request["argv"])
        reply = _run(request)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
