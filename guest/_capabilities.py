"""The prelude: what a snippet sees in place of the capabilities that the sandbox lacks.

Runs once, at build time, and is snapshotted. Every WASI import of the component is a trapping
stub (`--stub-wasi`), so anything that would reach one is either served by the host (clock,
bounded sleep), derived from per-run host entropy (randomness), or refused here with a clear
Python exception the snippet can catch. The wasm boundary, not this module, is what holds:
a snippet that undoes these patches only reaches a stub, which traps and is contained.
"""

import builtins
import hashlib
import importlib
import linecache
import os
import random
import sys
import time
import types
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from guest._allowlist import ALLOWED_MODULES, DENIED_CAPABILITIES, WARM_ONLY_MODULES
from guest._hostcall import host_call

__all__ = ["SandboxRestriction", "check_shared_generator_unmade", "install", "reseed"]

# Force the pure-Python datetime so that `datetime.now()` reads the rebound `time.time`.
sys.modules["_datetime"] = None  # type: ignore[assignment]

_ADVICE = {
    "filesystem": "the sandbox has no filesystem; pass data in through tool calls or literals",
    "network": "the sandbox has no network; reach outside services through tool calls",
    "processes": "the sandbox has no processes; do the work in Python or through tool calls",
    "native code": "the sandbox runs no native code",
    "stdin": "the sandbox has no stdin; pass data in through tool calls or literals",
}


class SandboxRestriction(PermissionError):
    """The snippet asked for a capability that the sandbox does not have."""


SandboxRestriction.__module__ = "builtins"  # tracebacks show `SandboxRestriction: ...`, not a guest path


def _refuse(capability: str, what: str) -> NoReturn:
    raise SandboxRestriction(f"{what}: {_ADVICE[capability]}")


def _refusing(capability: str, what: str) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> NoReturn:
        _refuse(capability, what)

    refused.__name__ = what
    return refused


class _Entropy:
    """A SHA-512 counter-mode stream over per-run host entropy (the snapshot's PRNG state is shared)."""

    def __init__(self) -> None:
        self._key = b""
        self._counter = 0

    def reseed(self, seed: bytes) -> None:
        self._key = bytes(seed)
        self._counter = 0

    def read(self, size: int) -> bytes:
        if size < 0:
            raise ValueError("negative argument not allowed")
        out = bytearray()
        while len(out) < size:
            self._counter += 1
            out += hashlib.sha512(self._key + self._counter.to_bytes(8, "little")).digest()
        return bytes(out[:size])


_entropy = _Entropy()
_module_seed = [0]  # the shared generator's seed for this run, drawn from its entropy at `reseed`
_SHARED_GENERATOR_FUNCTIONS: list[str] = []  # `random.random` and the rest: `random._inst`'s methods


class _SharedGeneratorNotYetMade:
    """`random._inst` until the run first uses it, and `random.random` and the rest call through it.

    Seeding the Mersenne Twister costs 83,000 fuel, 9% of a `print(1)` run, and most snippets never
    draw: so the shared generator is made, from the run's seed, at its first use. Until then no such
    generator exists, so none can be reached with the snapshot's state (`random.Random.random` called
    on a lazily seeded one would read it without seeding it)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_shared_generator(), name)


def _shared_generator() -> random.Random:
    """The run's shared generator, made and seeded on the first call."""
    generator = random._inst  # type: ignore[attr-defined]
    if isinstance(generator, _SharedGeneratorNotYetMade):
        generator = random.Random(_module_seed[0])
        random._inst = generator  # type: ignore[attr-defined]
        for name in _SHARED_GENERATOR_FUNCTIONS:  # later calls go straight to the generator
            setattr(random, name, getattr(generator, name))
    return generator


def _first_use_of(name: str) -> Any:
    """`random.<name>` until the shared generator exists (a snippet may keep it: it still works)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(_shared_generator(), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = getattr(random.Random, name).__doc__
    return call


def reseed(seed: bytes) -> None:
    """Seed every source of randomness from this run's host entropy (the module's shared generator
    when it is first used)."""
    _entropy.reseed(seed)
    _module_seed[0] = int.from_bytes(_entropy.read(32), "big")


def _install_randomness() -> None:
    os.urandom = _entropy.read
    random._urandom = _entropy.read  # type: ignore[attr-defined]  # SystemRandom, secrets
    plain_seed = random.Random.seed

    def seed(self: random.Random, a: Any = None, version: int = 2) -> None:
        # The C seeder would read WASI random (a stub): derive the default seed from host entropy.
        if a is None:
            a = int.from_bytes(_entropy.read(32), "big")
        plain_seed(self, a, version)

    random.Random.seed = seed  # type: ignore[method-assign]
    shared: random.Random = random._inst  # type: ignore[attr-defined]
    _SHARED_GENERATOR_FUNCTIONS.extend(
        name for name, value in vars(random).items() if getattr(value, "__self__", None) is shared
    )
    for name in _SHARED_GENERATOR_FUNCTIONS:  # methods bound to the snapshot's generator, which goes
        setattr(random, name, _first_use_of(name))
    random._inst = _SharedGeneratorNotYetMade()  # type: ignore[attr-defined]


def _clock() -> dict[str, int]:
    answer: dict[str, int] = host_call("@clock", {})
    return answer


def _clock_info(name: str) -> types.SimpleNamespace:
    """What time.get_clock_info says of the host's clocks (the WASI clocks are stubs)."""
    if name not in ("time", "monotonic", "perf_counter", "process_time", "thread_time"):
        raise ValueError("unknown clock")
    return types.SimpleNamespace(
        implementation="host", monotonic=name != "time", adjustable=name == "time", resolution=1e-09
    )


def _install_clock() -> None:
    c_localtime, c_gmtime, c_strftime = time.localtime, time.gmtime, time.strftime

    def time_ns() -> int:
        return _clock()["time_ns"]

    def monotonic_ns() -> int:
        return _clock()["monotonic_ns"]

    def sleep(seconds: float) -> None:
        # A host wait bounded by the execution's remaining wall budget, never an unbounded one.
        host_call("@sleep", {"seconds": float(seconds)})

    def now_or(secs: Any) -> float:
        return time_ns() / 1e9 if secs is None else float(secs)

    time.time_ns = time_ns
    time.time = lambda: time_ns() / 1e9
    time.monotonic_ns = time.perf_counter_ns = monotonic_ns
    time.monotonic = time.perf_counter = lambda: monotonic_ns() / 1e9
    time.process_time_ns = time.thread_time_ns = monotonic_ns
    time.process_time = time.thread_time = time.monotonic
    time.sleep = sleep
    time.get_clock_info = _clock_info  # asyncio's event loop asks for the monotonic clock's resolution

    def or_now(t: Any) -> Any:
        return c_localtime(now_or(None)) if t is None else t

    plain_asctime = time.asctime
    time.localtime = lambda secs=None: c_localtime(now_or(secs))
    time.gmtime = lambda secs=None: c_gmtime(now_or(secs))
    time.ctime = lambda secs=None: plain_asctime(c_localtime(now_or(secs)))
    time.strftime = lambda fmt, t=None: c_strftime(fmt, or_now(t))
    time.asctime = lambda t=None: plain_asctime(or_now(t))


class _NoStdin:
    def read(self, *_args: Any) -> NoReturn:
        _refuse("stdin", "reading stdin")

    readline = read
    readlines = read

    def isatty(self) -> bool:
        return False


def _install_refusals() -> None:
    builtins.open = _refusing("filesystem", "open()")
    import io

    io.open = builtins.open
    builtins.input = _refusing("stdin", "input()")
    sys.stdin = sys.__stdin__ = _NoStdin()  # type: ignore[assignment]
    for name in (
        "listdir",
        "scandir",
        "stat",
        "lstat",
        "open",
        "walk",
        "fwalk",
        "getcwd",
        "getcwdb",
        "chdir",
        "mkdir",
        "makedirs",
        "remove",
        "removedirs",
        "unlink",
        "rmdir",
        "rename",
        "renames",
        "replace",
        "access",
        "chmod",
        "chown",
        "link",
        "symlink",
        "readlink",
        "truncate",
        "utime",
        "statvfs",
        "opendir",
        "mkfifo",
        "mknod",
        "pipe",
        "dup",
        "dup2",
    ):
        if hasattr(os, name):
            setattr(os, name, _refusing("filesystem", f"os.{name}()"))
    for name in (
        "system",
        "popen",
        "fork",
        "forkpty",
        "kill",
        "killpg",
        "spawnl",
        "spawnle",
        "spawnlp",
        "spawnv",
        "spawnve",
        "spawnvp",
        "execl",
        "execle",
        "execlp",
        "execv",
        "execve",
        "execvp",
        "posix_spawn",
        "posix_spawnp",
        "wait",
        "waitpid",
    ):
        # Defined even where WASI lacks them, so the snippet learns why rather than an AttributeError.
        setattr(os, name, _refusing("processes", f"os.{name}()"))
    os.environ.clear()


_AUDIT_CAPABILITY = {
    "open": "filesystem",
    "subprocess": "processes",
    "socket": "network",
    "ctypes": "native code",
    "mmap": "native code",
    "shutil": "filesystem",
    "sqlite3": "filesystem",
    "urllib": "network",
    "http": "network",
    "ftplib": "network",
    "smtplib": "network",
    "glob": "filesystem",
}
_AUDIT_OS_PROCESSES = frozenset(
    {
        "os.system",
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.kill",
        "os.killpg",
        "os.startfile",
        "os.popen",
    }
)
_AUDIT_OS_ALLOWED = frozenset({"os.putenv", "os.unsetenv"})


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Audit hooks cannot be removed from Python, so this holds even against code that reaches
    # the original functions through references the patches above did not replace. It also stops
    # CPython itself from opening a "file" named after the snippet to quote a SyntaxError's line.
    head = event.partition(".")[0]
    if head == "os" and event not in _AUDIT_OS_ALLOWED:
        _refuse(
            "processes" if event in _AUDIT_OS_PROCESSES else "filesystem", event.removeprefix("os.") + "()"
        )
    capability = _AUDIT_CAPABILITY.get(head)
    if capability is not None:
        what = f"open({args[0]!r})" if event == "open" and args else event
        _refuse(capability, what)


def _install_linecache() -> None:
    # Traceback rendering must never open a file: only sources registered in memory are shown.
    linecache.updatecache = lambda *_a, **_k: []  # type: ignore[assignment]
    linecache.checkcache = lambda *_a, **_k: None  # type: ignore[assignment]
    linecache.lazycache = lambda *_a, **_k: False  # type: ignore[assignment]


class _SandboxFinder:
    """The only import finder: what is not in the snapshot does not exist."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> None:
        capability = DENIED_CAPABILITIES.get(fullname) or DENIED_CAPABILITIES.get(fullname.split(".")[0])
        if capability:
            raise ModuleNotFoundError(
                f"module {fullname!r} is not available: {_ADVICE.get(capability, capability)}", name=fullname
            )
        raise ModuleNotFoundError(
            f"No module named {fullname!r} in the sandbox; it can import: {', '.join(ALLOWED_MODULES)}",
            name=fullname,
        )

    @classmethod
    def invalidate_caches(cls) -> None:
        return None


def _warm_up() -> None:
    """Run once the lazy paths that would otherwise import or touch files at run time."""
    import datetime
    import traceback

    datetime.datetime.strptime("2024-01-02 03:04", "%Y-%m-%d %H:%M")
    "bücher.example".encode("idna").decode("idna")
    try:
        raise ValueError("warm-up")
    except ValueError as exc:
        traceback.format_exception(exc)


def _preload() -> None:
    for name in ALLOWED_MODULES + WARM_ONLY_MODULES:
        importlib.import_module(name)


def _seal_imports() -> None:
    for name in DENIED_CAPABILITIES:
        sys.modules.pop(name, None)
    sys.path[:] = []
    sys.path_hooks.clear()
    sys.path_importer_cache.clear()
    sys.meta_path[:] = [_SandboxFinder]


def install() -> None:
    """Preload the allowlist, then replace every capability with a host service or a refusal."""
    _preload()
    _warm_up()
    _install_randomness()
    _install_clock()
    _install_refusals()
    _install_linecache()
    _seal_imports()
    sys.addaudithook(_audit)
    check_shared_generator_unmade()


def check_shared_generator_unmade() -> None:
    """Fail the build if anything drew from the shared generator: it would be seeded into the
    snapshot, and every run would then draw the same numbers."""
    if not isinstance(random._inst, _SharedGeneratorNotYetMade):  # type: ignore[attr-defined]
        raise RuntimeError("the shared random generator was used while the snapshot was built")
