"""The sandbox escape suite as data: hostile snippets and what containing each one looks like.

Each case runs through the real execution path. It is contained when the execution ends the
expected way (an error type, or a check on a successful result) and the sandbox then runs a
normal snippet correctly. `tests/escape` runs every case; a later `sandbox-test` command runs
them against a team's own config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio

from gateway._result import ExecutionResult
from gateway._sandbox import Sandbox
from gateway.testing import InProcessTools

__all__ = ["CASES", "CaseOutcome", "EscapeCase", "probe_tools", "run_case"]


@dataclass(frozen=True)
class EscapeCase:
    """One hostile snippet; `error` is the expected error type, or None: it must succeed and pass `check`."""

    id: str
    category: str
    code: str
    error: str | None = None
    says: str = ""  # a substring the error message (or the checked output) must contain
    check: Callable[[ExecutionResult], bool] | None = None


@dataclass(frozen=True)
class CaseOutcome:
    case: EscapeCase
    contained: bool
    still_serves: bool
    detail: str

    @property
    def passed(self) -> bool:
        return self.contained and self.still_serves


def _value_is(expected: object) -> Callable[[ExecutionResult], bool]:
    return lambda r: r.ok and r.value == expected


def _case(
    id: str,
    category: str,
    code: str,
    error: str | None = None,
    says: str = "",
    check: Callable[[ExecutionResult], bool] | None = None,
) -> EscapeCase:
    return EscapeCase(id, category, code.strip() + "\n", error, says, check)


_FS = "the sandbox has no filesystem"
_NET = "the sandbox has no network"
_PROC = "the sandbox has no processes"

# fmt: off
CASES: tuple[EscapeCase, ...] = (
    # filesystem
    _case("fs-open-read", "filesystem", "open('/etc/passwd').read()", "SandboxRestriction", _FS),
    _case("fs-open-write", "filesystem", "open('/tmp/x', 'w').write('x')", "SandboxRestriction", _FS),
    _case("fs-listdir", "filesystem", "import os; os.listdir('/')", "SandboxRestriction", _FS),
    _case("fs-stat", "filesystem", "import os; os.stat('/etc')", "SandboxRestriction", _FS),
    _case("fs-fileio", "filesystem", "import io; io.FileIO('/etc/hostname')", "SandboxRestriction", _FS),
    _case(
        "fs-posix-listdir",
        "filesystem",
        "import sys; sys.modules['posix'].listdir('/')",
        "SandboxRestriction",
        _FS,
    ),
    _case("fs-pathlib", "filesystem", "import pathlib", "ModuleNotFoundError", _FS),
    _case(
        "fs-exists-is-false", "filesystem", "import os; os.path.exists('/etc/passwd')", check=_value_is(False)
    ),
    _case("fs-syntax-error-quotes-snippet", "filesystem", "x = (1 +", "SyntaxError", "was never closed"),
    # network
    _case("net-import-socket", "network", "import socket", "ModuleNotFoundError", _NET),
    _case(
        "net-stashed-socket",
        "network",
        "import asyncio; asyncio.base_events.socket.socket()",
        "SandboxRestriction",
        _NET,
    ),
    _case("net-urllib-request", "network", "import urllib.request", "ModuleNotFoundError", _NET),
    _case("net-ssl", "network", "import ssl", "ModuleNotFoundError", _NET),
    # processes
    _case("proc-subprocess", "processes", "import subprocess", "ModuleNotFoundError", _PROC),
    _case("proc-os-system", "processes", "import os; os.system('id')", "SandboxRestriction", _PROC),
    _case(
        "proc-posix-has-no-system",
        "processes",
        "import sys; sys.modules['posix'].system('id')",
        "AttributeError",
        "no attribute 'system'",
    ),
    _case("proc-execv", "processes", "import os; os.execv('/bin/sh', ['sh'])", "SandboxRestriction", _PROC),
    _case("proc-fork", "processes", "import os; os.fork()", "SandboxRestriction", _PROC),
    _case("proc-ctypes", "processes", "import ctypes", "ModuleNotFoundError", "native code"),
    # environment and stdin
    _case("env-is-empty", "environment", "import os; dict(os.environ)", check=_value_is({})),
    _case(
        "env-getenv-home",
        "environment",
        "import os; os.getenv('HOME')",
        check=lambda r: r.ok and r.value is None,
    ),
    _case("stdin-input", "environment", "input()", "SandboxRestriction", "stdin"),
    _case("stdin-read", "environment", "import sys; sys.stdin.read()", "SandboxRestriction", "stdin"),
    # imports outside the allowlist
    _case("import-numpy", "imports", "import numpy", "ModuleNotFoundError", "it can import: "),
    _case(
        "import-importlib-path",
        "imports",
        "import importlib; importlib.import_module('email')",
        "ModuleNotFoundError",
        "it can import: ",
    ),
    # CPU, wall time, memory, stack
    _case("cpu-spin", "cpu", "while True: pass", "FuelExhausted", "sandbox.fuel"),
    _case(
        "cpu-bigint", "cpu", "x = 7\nwhile True: x = x * x % (10**4000 + 7)", "FuelExhausted", "sandbox.fuel"
    ),
    _case(
        "wall-sleep-forever",
        "wall-time",
        "import time; time.sleep(10**6)",
        "WallTimeExceeded",
        "sandbox.timeout_seconds",
    ),
    _case("wall-sleep-negative", "wall-time", "import time; time.sleep(-1)", "ToolError", "non-negative"),
    _case(
        "wall-asyncio-sleep",
        "wall-time",
        "import asyncio; await asyncio.sleep(10**6)",
        "WallTimeExceeded",
        "sandbox.timeout_seconds",
    ),
    _case("mem-huge-bytearray", "memory", "bytearray(2**30)", "MemoryLimitExceeded", "sandbox.memory_bytes"),
    _case(
        "mem-growing-list",
        "memory",
        "x = []\nwhile True: x.append(bytearray(10**6))",
        "MemoryLimitExceeded",
        "sandbox.memory_bytes",
    ),
    _case(
        "stack-json-nesting",
        "stack",
        "import json; json.loads('[' * 10**6)",
        "StackExhausted",
        "sandbox.max_wasm_stack_bytes",
    ),
    _case("stack-recursion-limit", "stack", "def f(n): return f(n + 1)\nf(0)", "RecursionError", "recursion"),
    # output floods
    _case(
        "out-stdout-flood",
        "output",
        "print('x' * 10**7)",
        check=lambda r: r.ok and r.stdout_truncated and "sandbox.max_stdout_bytes" in r.stdout,
    ),
    _case(
        "out-stderr-flood",
        "output",
        "import sys\nfor _ in range(10**4): print('y' * 100, file=sys.stderr)",
        check=lambda r: r.ok and r.stderr_truncated and "sandbox.max_stderr_bytes" in r.stderr,
    ),
    _case(
        "out-real-stdout",
        "output",
        "import sys; sys.__stdout__.write('z' * 10**7)",
        check=lambda r: r.ok and len(r.stdout) < 10**6,
    ),
    _case(
        "out-huge-value",
        "output",
        "'v' * 10**7",
        check=lambda r: r.ok and r.value_repr is not None and "sandbox.max_value_bytes" in r.value_repr,
    ),
    # tool calls
    _case(
        "tool-flood",
        "tools",
        "for i in range(10**6):\n    try: tools.probe.echo(i=i)\n    except Exception: pass",
        "ToolCallLimitExceeded",
        "sandbox.max_tool_calls",
    ),
    _case(
        "tool-huge-args",
        "tools",
        "tools.probe.echo(blob='a' * 10**7)",
        "ToolPayloadTooLarge",
        "sandbox.max_tool_args_bytes",
    ),
    _case(
        "tool-huge-result",
        "tools",
        "tools.probe.big(n=10**7)",
        "ToolPayloadTooLarge",
        "sandbox.max_tool_result_bytes",
    ),
    _case("tool-unknown", "tools", "tools.nope.nothing()", "ToolError", "unknown tool"),
    _case(
        "tool-error-is-catchable",
        "tools",
        "try:\n    tools.probe.fail()\nexcept ToolError as e:\n    r = str(e)\nr",
        check=_value_is("probe failed"),
    ),
    _case(
        "tool-slow-past-budget",
        "tools",
        "tools.probe.slow(seconds=10**6)",
        "WallTimeExceeded",
        "sandbox.timeout_seconds",
    ),
    _case("tool-host-crash-contained", "tools", "tools.probe.crash()", "GuestCrashed", "gateway log"),
    # malformed host calls, straight through the import
    _case(
        "host-bad-json",
        "host-calls",
        "from wit_world.imports import host\nhost.call('probe.echo', '{not json')",
        "Err",
        "not valid JSON",
    ),
    _case(
        "host-array-args",
        "host-calls",
        "from wit_world.imports import host\nhost.call('probe.echo', '[1]')",
        "Err",
        "must be a JSON object",
    ),
    _case(
        "host-huge-name",
        "host-calls",
        "from wit_world.imports import host\nhost.call('x' * 10**6, '{}')",
        "Err",
        "character cap",
    ),
    _case(
        "host-unknown-service",
        "host-calls",
        "from wit_world.imports import host\nhost.call('@exec', '{}')",
        "Err",
        "unknown host service",
    ),
    _case(
        "host-sleep-bad-args",
        "host-calls",
        "from wit_world.imports import host\nhost.call('@sleep', '\"x\"')",
        "Err",
        "non-negative",
    ),
    # the snippet itself
    _case("code-too-large", "input", "x = '" + "a" * 300_000 + "'", "CodeTooLarge", "sandbox.max_code_bytes"),
    _case("sys-exit-nonzero", "input", "import sys; sys.exit(3)", "SystemExit", "3"),
)
# fmt: on


def probe_tools(fail_message: str = "probe failed") -> InProcessTools:
    """The in-process tools the tool-call cases use."""

    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    def crash() -> None:
        raise RuntimeError("a bug in the tool caller")

    def fail() -> None:
        from gateway._errors import ToolCallError

        raise ToolCallError(fail_message)

    def echo(**arguments: object) -> dict[str, object]:
        return arguments

    def big(n: int) -> str:
        return "b" * n

    return InProcessTools(
        {
            "probe.echo": echo,
            "probe.big": big,
            "probe.fail": fail,
            "probe.slow": slow,
            "probe.crash": crash,
        }
    )


_SERVES = "import random\nprint(sum(range(10)))\nrandom.random() < 1.0"


async def run_case(sandbox: Sandbox, case: EscapeCase) -> CaseOutcome:
    """Run one hostile snippet, then a normal one; report whether both went as they must."""
    result = await sandbox.execute(case.code, tool_caller=probe_tools())
    if case.error is not None:
        got = result.error.type if result.error else "no error"
        message = result.error.message if result.error else ""
        contained = got == case.error and case.says in message
        detail = f"expected {case.error} saying {case.says!r}, got {got}: {message[:200]}"
    else:
        contained = case.check is not None and case.check(result)
        detail = f"check failed on ok={result.ok} error={result.error} value={str(result.value)[:100]}"
    after = await sandbox.execute(_SERVES)
    still_serves = after.ok and after.stdout == "45\n" and after.value is True
    return CaseOutcome(case, contained, still_serves, "" if contained and still_serves else detail)
