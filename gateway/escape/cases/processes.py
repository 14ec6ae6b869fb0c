"""Starting processes or threads, exiting the interpreter, and signals."""

from __future__ import annotations

from gateway.escape.cases._model import (
    FIND_CLASS,
    LOAD_BUILTIN,
    NO_PROC,
    EscapeCase,
    case_maker,
    crash,
    refused,
    succeeds,
)

__all__ = ["CASES"]

_case = case_maker("processes")
_signal = case_maker("signals")
_DENIED = refused("SandboxRestriction", NO_PROC)
_NOT_THERE = refused("ModuleNotFoundError", NO_PROC)
_NO_WASI_PROCESSES = refused("OSError", "does not support processes")
_EXIT_STUB = refused("CapabilityDenied", "processes")

CASES: tuple[EscapeCase, ...] = (
    _case("proc-import-subprocess", "import subprocess", _NOT_THERE),
    _case("proc-import-multiprocessing", "import multiprocessing", _NOT_THERE),
    _case("proc-import-_posixsubprocess", "import _posixsubprocess", _NOT_THERE),
    _case("proc-os-system", "import os; os.system('id')", _DENIED),
    _case("proc-os-popen", "import os; os.popen('id').read()", _DENIED),
    _case("proc-os-execv", "import os; os.execv('/bin/sh', ['sh'])", _DENIED),
    _case("proc-os-fork", "import os; os.fork()", _DENIED),
    _case("proc-os-kill", "import os; os.kill(1, 9)", _DENIED),
    _case("proc-os-posix-spawn", "import os; os.posix_spawn('/bin/sh', ['sh'], {})", _DENIED),
    _case(
        "proc-posix-has-no-system",
        "import sys; sys.modules['posix'].system('id')",
        refused("AttributeError", "no attribute 'system'"),
    ),
    # asyncio imported subprocess at build time and still holds it; WASI itself has no processes.
    _case(
        "proc-stashed-subprocess-popen",
        "import asyncio.base_subprocess as stash\nstash.subprocess.Popen(['id'])",
        _NO_WASI_PROCESSES,
    ),
    _case(
        "proc-wrap-close-by-subclass-walk",
        FIND_CLASS + "import os\nfind_class('_wrap_close')(os.popen('id'), None).close()",
        _DENIED,
    ),
    _case("proc-popen-by-subclass-walk", FIND_CLASS + "find_class('Popen')(['id'])", _NO_WASI_PROCESSES),
    _case(
        "proc-asyncio-subprocess",
        "import asyncio\nawait asyncio.create_subprocess_exec('id')",
        refused("NotImplementedError"),  # the sandbox's event loop has no subprocess transport
    ),
    _case(
        "proc-thread-start",
        "import threading\nthreading.Thread(target=print).start()",
        refused("RuntimeError", "can't start new thread"),
    ),
    _case(
        "proc-_thread-start",
        "import _thread\n_thread.start_new_thread(print, ())",
        refused("RuntimeError", "can't start new thread"),
    ),
    _case("proc-os-_exit", "import os; os._exit(0)", _EXIT_STUB),
    _case("proc-posix-_exit", "import sys; sys.modules['posix']._exit(3)", _EXIT_STUB),
    _case("proc-os-abort", "import os; os.abort()", crash()),
    _case(
        "proc-atexit-never-runs",
        "import atexit\natexit.register(print, 'ran at exit')\nNone",
        succeeds(lambda r, _: "ran at exit" not in r.stdout, "the exit handler never ran"),
    ),
    _signal("sig-import-signal", "import signal", _NOT_THERE),
    _signal(
        "sig-stashed-alarm",
        "import asyncio.unix_events as stash\nstash.signal.alarm(1)",
        refused("AttributeError", "alarm"),
    ),
    _signal(
        "sig-stashed-setitimer",
        "import asyncio.unix_events as stash\nstash.signal.setitimer(0, 0.1)",
        refused("AttributeError", "setitimer"),
    ),
    _signal(
        "sig-handler-installs-but-never-fires",
        "import _signal\n_signal.signal(2, lambda *a: print('fired'))\nNone",
        succeeds(lambda r, _: "fired" not in r.stdout, "no signal is ever delivered"),
    ),
    _signal("sig-raise-signal-kill", "import _signal\n_signal.raise_signal(9)", crash()),
    _signal("sig-faulthandler-segfault", LOAD_BUILTIN + "load_builtin('faulthandler')._sigsegv()", crash()),
    _signal("sig-keyboard-interrupt", "raise KeyboardInterrupt", refused("KeyboardInterrupt")),
)
