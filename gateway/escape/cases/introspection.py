"""Introspection: frames, the collector, the guest's own internals and the interpreter's memory.

Nothing of the host lives inside the sandbox, so what matters here is that tampering with the
guest (frames of the runner, its output capture, its result encoding) cannot lift a host-side
cap, and that corrupting the interpreter itself stays inside the wasm instance.
"""

from __future__ import annotations

from gateway.escape.cases._model import (
    FIND_CLASS,
    LOAD_BUILTIN,
    EscapeCase,
    Expect,
    any_outcome,
    case_maker,
    crash,
    limit,
    refused,
    succeeds,
    value_is,
)
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("introspection")
_RUNNER = "import sys\nrunner = sys._getframe(2).f_locals  # guest.main's run(): options, out, err\n"
_SLACK = 1024  # the host's truncation note


def _stdout_capped(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return len(result.stdout.encode()) <= limits.max_stdout_bytes + _SLACK


# The guest's own cap is the snippet's to lift; the host's is not. The host either caps the
# output itself or refuses the whole outcome as malformed (GuestCrashed).
_HOST_CAPS_STDOUT = Expect(
    ("GuestCrashed",), ok=True, check=_stdout_capped, what="the host caps stdout or refuses it"
)


def _value_capped(result: ExecutionResult, limits: SandboxLimits) -> bool:
    cap = limits.max_value_bytes + _SLACK
    shown = len((result.value_repr or "").encode())
    return result.ok and shown <= cap and len(repr(result.value)) <= 2 * cap


_RAISE_VALUE_CAP = """
options = runner['options']
if isinstance(options, dict):
    options['max_value_bytes'] = 10**9
else:
    options.max_value_bytes = 10**9
"""
# Every JSON the guest produces after the snippet (its outcome included) comes from this function.
_FORGE_JSON = "import json\njson.dumps = lambda *args, **kwargs: {text}\n1"

_BYTECODE = """
import dis
def f():
    return 1
f.__code__ = f.__code__.replace(co_code=bytes([dis.opmap[{op!r}], {arg}]) * (len(f.__code__.co_code) // 2))
f()
"""

CASES: tuple[EscapeCase, ...] = (
    _case(
        "intro-frames-stop-at-the-guest",
        "import sys\nf, names = sys._getframe(), []\nwhile f:\n"
        "    names.append(f.f_code.co_filename)\n    f = f.f_back\nnames",
        value_is(["<snippet>", "/0/guest/_snippet.py", "/0/guest/main.py"]),
    ),
    _case(
        "intro-traceback-frames",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f, names = e.__traceback__.tb_frame, []\n"
        "while f:\n    names.append(f.f_code.co_name)\n    f = f.f_back\nnames",
        value_is(["<module>", "run_snippet", "run"]),
    ),
    _case(
        "intro-generator-frame",
        "def g():\n    yield 1\nx = g()\nnext(x)\nx.gi_frame.f_back is None",
        value_is(True),
    ),
    _case(
        "intro-gc-finds-no-host-objects",
        "import gc\ngc.unfreeze()\n"
        "sorted({type(o).__module__ for o in gc.get_objects()}"
        " & {'wasmtime', 'gateway', 'anyio', 'mcp', 'pydantic', 'ctypes'})",
        value_is([]),
    ),
    _case(
        "intro-gc-referrers-of-the-host-import",
        "import gc, sys\nlen(gc.get_referrers(sys.modules['wit_world.imports.host'])) >= 0",
        value_is(True),
    ),
    _case(
        "intro-raise-the-value-cap",
        lambda lim: _RUNNER + _RAISE_VALUE_CAP + f"'v' * {lim.max_value_bytes * 4}",
        succeeds(_value_capped, "the host still caps the value"),
    ),
    _case(
        "intro-raise-the-stdout-cap",
        _RUNNER + "runner['out']._limit = 10**9\nprint('x' * 10**7)",
        _HOST_CAPS_STDOUT,
    ),
    _case(
        "intro-stuff-the-stdout-buffer",
        "import sys\nsys.stdout._parts.append('q' * 5 * 10**6)",
        _HOST_CAPS_STDOUT,
    ),
    _case(
        "intro-huge-captured-output",
        _RUNNER + "type(runner['out']).getvalue = lambda self: 'y' * 10**8",
        crash("MemoryLimitExceeded", "FuelExhausted", ok=True),
    ),
    _case(
        "intro-break-the-bindings",
        "import sys\nsys.modules['guest.main'].wit_world.Outcome = None",
        crash(ok=True),
    ),
    # The host parses what the guest hands back after the snippet: it must survive whatever arrives.
    _case("intro-outcome-invalid-json", _FORGE_JSON.format(text="'{not json'"), any_outcome()),
    _case("intro-outcome-deeply-nested-json", _FORGE_JSON.format(text="'[' * 100000"), any_outcome()),
    _case("intro-outcome-wrong-shape", _FORGE_JSON.format(text="'[1, 2, 3]'"), any_outcome()),
    _case(
        "intro-outcome-wrong-types", _FORGE_JSON.format(text='\'{"stdout": 5, "error": 7}\''), any_outcome()
    ),
    _case(
        "intro-value-nested-990-deep",
        "x = []\nfor _ in range(990):\n    x = [x]\nx",
        any_outcome(),
    ),
    _case(
        "intro-builtin-importer-posix",
        LOAD_BUILTIN + "load_builtin('posix').listdir('/')",
        refused("SandboxRestriction", "no filesystem"),
    ),
    _case(
        "intro-builtin-importer-load-module",
        FIND_CLASS + "find_class('BuiltinImporter').load_module('posix').listdir('/')",
        refused("SandboxRestriction", "no filesystem"),
    ),
    _case(
        "intro-raw-import-call",
        "import sys\nsys.modules['componentize_py_runtime'].call_import(0, ['@clock', '{}'])",
        succeeds(lambda r, _: "time_ns" in str(r.value), "the raw import is the same one door"),
    ),
    _case(
        "intro-raw-import-bad-index",
        "import sys\nsys.modules['componentize_py_runtime'].call_import(7, [])",
        crash(),
    ),
    _case(
        "intro-raw-import-huge-index",
        "import sys\nsys.modules['componentize_py_runtime'].call_import(2**31, ['x', '{}'])",
        crash("OverflowError", "TypeError"),
    ),
    _case(
        "intro-drop-bogus-resource",
        "import sys\nsys.modules['componentize_py_runtime'].drop_resource(1, 12345)",
        crash(ok=True),
    ),
    # Reading past the frame is undefined inside the guest: a trap, or CPython tripping over what it
    # read (the heap differs with each run's seed); either is contained.
    _case("intro-bogus-bytecode-const", _BYTECODE.format(op="LOAD_CONST", arg=200), crash("SystemError")),
    _case("intro-bogus-bytecode-local", _BYTECODE.format(op="LOAD_FAST", arg=250), crash("SystemError")),
    _case(
        "intro-marshal-garbage",
        "import marshal\nmarshal.loads(b'\\xff' * 100)",
        refused("ValueError", "bad marshal data"),
    ),
    _case(
        "intro-value-repr-raises",
        "class X:\n    def __repr__(self):\n        raise ValueError('no repr')\nX()",
        crash("ValueError", ok=True),
    ),
    _case(
        "intro-value-repr-never-returns",
        "class X:\n    def __repr__(self):\n        while True:\n            pass\nX()",
        limit("FuelExhausted"),
    ),
    _case(
        "intro-self-referential-value",
        "x = []\nx.append(x)\nx",
        succeeds(lambda r, _: r.value_repr == "[[...]]", "shown as its repr"),
    ),
    _case(
        "intro-frame-globals-tampering",
        "import sys\nsys._getframe(1).f_globals['_VALUE'] = 'elsewhere'\n42",
        any_outcome(),
    ),
)
