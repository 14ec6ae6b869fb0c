"""Tampering that must not survive into the next execution, and entropy that must differ per run."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    needs_tool_calls,
    refused,
    succeeds,
    value_is,
)
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("persistence")
_entropy = case_maker("entropy")
_TAMPERS = succeeds(what="the tampering works inside its own execution")


def _value(expected: object) -> Callable[[ExecutionResult, ExecutionResult], bool]:
    def check(_first: ExecutionResult, second: ExecutionResult) -> bool:
        return second.ok and second.value == expected

    return check


def _differs(first: ExecutionResult, second: ExecutionResult) -> bool:
    return second.ok and second.value != first.value


def _all_differ(first: ExecutionResult, second: ExecutionResult) -> bool:
    a: object = first.value
    b: object = second.value
    if not (second.ok and isinstance(a, list) and isinstance(b, list)):
        return False
    draws = cast("list[object]", a), cast("list[object]", b)
    return len(draws[0]) == len(draws[1]) and all(x != y for x, y in zip(*draws, strict=True))


_SEALED: list[object] = [1, [], []]  # one finder, no path, no path hooks
_DRAWS = (
    "import os, random, secrets, uuid\n"
    "[random.random(), random.getrandbits(64), os.urandom(8).hex(), secrets.token_hex(8),\n"
    " str(uuid.uuid4()), str(uuid.uuid1()), random.SystemRandom().random(), random.Random().random()]"
)

CASES: tuple[EscapeCase, ...] = (
    _case(
        "persist-builtins-open",
        "import builtins\nbuiltins.open = lambda *a, **k: 'forged'\nopen('/etc/passwd')",
        value_is("forged"),
        then="try:\n    open('/etc/passwd')\nexcept PermissionError as e:\n    r = type(e).__name__\nr",
        then_check=_value("SandboxRestriction"),
    ),
    _case(
        "persist-builtins-print",
        "import builtins\nbuiltins.print = None",
        _TAMPERS,
        then="print('hi')",
        then_check=lambda _, second: second.ok and second.stdout == "hi\n",
    ),
    _case(
        "persist-sys-modules-json",
        "import sys, types\nfake = types.ModuleType('json')\nfake.dumps = lambda *a, **k: 'forged'\n"
        "sys.modules['json'] = fake",
        _TAMPERS,
        then="import json\njson.dumps([1])",
        then_check=_value("[1]"),
    ),
    _case(
        "persist-json-loads",
        "import json\njson.loads = None",
        _TAMPERS,
        then="import json\njson.loads('[1]')",
        then_check=_value([1]),
    ),
    _case(
        "persist-random-seed",
        "import random\nrandom.seed(0)\nrandom.random()",
        _TAMPERS,
        then="import random\nrandom.random()",
        then_check=_differs,
    ),
    _case(
        "persist-entropy-key",
        "import os, sys\nsys.modules['guest._capabilities']._entropy.reseed(b'fixed')\nos.urandom(8).hex()",
        _TAMPERS,
        then="import os\nos.urandom(8).hex()",
        then_check=_differs,
    ),
    _case(
        "persist-time-functions",
        "import time\ntime.time = time.monotonic = lambda: 0.0\ntime.time()",
        value_is(0.0),
        then="import time\ntime.time() > 1.6e9 and time.monotonic() > 0",
        then_check=_value(True),
    ),
    _case(
        "persist-datetime",
        "import datetime\ndatetime.datetime = None",
        _TAMPERS,
        then="import datetime\ndatetime.datetime.now().year >= 2024",
        then_check=_value(True),
    ),
    _case(
        "persist-linecache",
        "import linecache\nlinecache.cache['<snippet>'] = (7, None, ['FORGED\\n'] * 9, '<snippet>')",
        _TAMPERS,
        then="x = 1\n1 / 0",
        then_check=lambda _, second: (
            second.error is not None
            and "1 / 0" in (second.error.traceback or "")
            and "FORGED" not in (second.error.traceback or "")
        ),
    ),
    _case(
        "persist-tools-proxy",
        "type(tools).__getattr__ = lambda self, name: 'hijacked'\ntools.probe",
        value_is("hijacked"),
        then="tools.probe.echo(a=1)",
        then_check=_value({"a": 1}),
        needs=needs_tool_calls(1),
    ),
    _case(
        "persist-tool-error-class",
        "ToolError.__init__ = None\nToolError.__str__ = lambda self: 'forged'",
        _TAMPERS,
        then="try:\n    tools.probe.fail()\nexcept ToolError as e:\n    r = str(e)\nr",
        then_check=_value("probe failed"),
        needs=needs_tool_calls(1),
    ),
    _case(
        "persist-import-machinery",
        "import sys\nsys.meta_path.clear()\nsys.path.append('/evil')\nsys.path_hooks.append(print)",
        _TAMPERS,
        then="import sys\n[len(sys.meta_path), sys.path, sys.path_hooks]",
        then_check=_value(_SEALED),
    ),
    _case(
        "persist-audit-hook",
        "import sys\nsys.addaudithook(lambda event, args: sys.stderr.write('spy ' + event + '\\n'))",
        succeeds(),
        then="import json\njson.dumps(1)",
        then_check=lambda _, second: second.ok and "spy" not in second.stderr,
    ),
    _case(
        "persist-recursion-limit",
        "import sys\nsys.setrecursionlimit(10**6)",
        _TAMPERS,
        then="import sys\nsys.getrecursionlimit() < 10**6",
        then_check=_value(True),
    ),
    _case(
        "persist-gc-disabled",
        "import gc\ngc.disable()",
        _TAMPERS,
        then="import gc\ngc.isenabled()",
        then_check=_value(True),
    ),
    _case(
        "persist-namespace-global",
        "planted = 42",
        _TAMPERS,
        then="planted",
        then_check=lambda _, second: second.error is not None and second.error.type == "NameError",
    ),
    _case(
        "persist-warnings-filter",
        "import warnings\nwarnings.simplefilter('error')",
        _TAMPERS,
        then="import warnings\nwarnings.warn('harmless')\n1",
        then_check=_value(1),
    ),
    _case(
        "persist-stdout-redirect",
        "import io, sys\nsys.stdout = io.StringIO()",
        _TAMPERS,
        then="print('visible')",
        then_check=lambda _, second: second.ok and second.stdout == "visible\n",
    ),
    _case(
        "persist-int-digits-limit",
        "import sys\nsys.set_int_max_str_digits(0)",
        _TAMPERS,
        then="len(str(10**5000))",
        then_check=lambda _, second: second.error is not None and second.error.type == "ValueError",
    ),
    _case(
        "persist-asyncio-sleep",
        "import asyncio\nasyncio.sleep = None",
        _TAMPERS,
        then="import asyncio\nawait asyncio.sleep(0)\n1",
        then_check=_value(1),
    ),
    _entropy(
        "entropy-two-runs-differ",
        _DRAWS,
        succeeds(what="draws from every source of randomness"),
        then=_DRAWS,
        then_check=_all_differ,
    ),
    _entropy(
        "entropy-draws-differ-within-a-run",
        "import os\nlen({os.urandom(16) for _ in range(1000)})",
        value_is(1000),
    ),
    _entropy("entropy-large-urandom", "import os\nlen(os.urandom(10**5))", value_is(10**5)),
    # The shared generator is made, and seeded from the run's entropy, at its first use: before that
    # no generator holds the snapshot's state for a base-class method to read past the seeding.
    _entropy(
        "entropy-shared-generator-before-first-use",
        "import random, _random\nout = []\n"
        "for reach in (lambda: random.Random.random(random._inst), lambda: random.random.__self__,\n"
        "              lambda: _random.Random.getstate(random._inst)):\n"
        "    try:\n        out.append(repr(reach())[:40])\n"
        "    except Exception as exc:\n        out.append(type(exc).__name__)\nout",
        value_is(["TypeError", "AttributeError", "TypeError"]),
    ),
    # random.seed() with no argument reseeds from the run's entropy (the module's alias from import
    # time once reached the C seeder, which reads WASI random and traps).
    _entropy(
        "entropy-random-seed-no-argument",
        "import random\nrandom.seed()\nrandom.random()",
        Expect(("CapabilityDenied",), "entropy", ok=True),
    ),
    _entropy(
        "entropy-_random-direct",
        "import _random\n_random.Random().random()",
        refused("CapabilityDenied", "entropy"),
    ),
)
