"""The host's environment, secrets and stdin: nothing of the host may be visible inside."""

from __future__ import annotations

from gateway.escape.cases._model import (
    NO_STDIN,
    EscapeCase,
    case_maker,
    needs_fuel,
    refused,
    succeeds,
    value_is,
)

__all__ = ["CASES"]

_case = case_maker("environment")

# Host-looking strings anywhere in the heap (the snapshot included): home directories, this
# checkout, a venv, credentials. The needles are built at run time, so the snippet's own
# source (which the heap also holds) does not match them.
_HEAP_SCAN = r"""
import gc
gc.unfreeze()
objects = gc.get_objects()  # taken before `strings` exists, so the scan does not walk its own output
strings = []
for obj in objects:
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (tuple, list)) else ()
    strings += [x if isinstance(x, str) else x.decode('latin-1') for x in items if isinstance(x, str | bytes)]
heap = '\0'.join(s for s in strings if s.strip('\0'))  # the snapshot's hole fillers are all NULs
needles = [s[::-1] for s in ('/emoh/', '/toor/', '/krow/', '/vnev.', '=NEKOT', '=TERCES', '=DROWSSAP',
                             'YEK ETAVIRP', '_phg', 'AIKA', 'SDNETXE_LENNAHC')]
[n for n in needles if n in heap]
"""

_HEAP_SCAN_FUEL = 2_000_000_000

_NOTHING: list[object] = [[], [], "", []]

CASES: tuple[EscapeCase, ...] = (
    _case("env-os-environ-is-empty", "import os; dict(os.environ)", value_is({})),
    _case("env-environb-is-empty", "import os; len(os.environb)", value_is(0)),
    _case("env-posix-environ-is-empty", "import sys; dict(sys.modules['posix'].environ)", value_is({})),
    _case("env-getenv-home", "import os; os.getenv('HOME')", value_is(None)),
    _case(
        "env-argv-and-executable-are-empty",
        "import sys; [sys.argv, sys.orig_argv, sys.executable, sys.path]",
        value_is(_NOTHING),
    ),
    _case(
        "env-uname-is-wasi",
        "import os; os.uname().sysname",
        value_is("wasi"),
    ),
    # The scan walks every item of every container (~100k): more fuel than the suite's cap gives a case.
    _case(
        "env-no-host-strings-in-heap",
        _HEAP_SCAN,
        value_is([]),
        needs=needs_fuel(_HEAP_SCAN_FUEL),
        limits=lambda limits: limits.model_copy(update={"fuel": _HEAP_SCAN_FUEL}),
    ),
    _case(
        "env-putenv-stays-inside",
        "import os\nos.environ['LEAK'] = 'x'\nos.putenv('LEAK2', 'y')\nos.getenv('LEAK')",
        value_is("x"),
        then="import os; dict(os.environ)",
        then_check=lambda _, second: second.ok and second.value == {},
    ),
    _case("stdin-input", "input()", refused("SandboxRestriction", NO_STDIN)),
    _case("stdin-read", "import sys; sys.stdin.read()", refused("SandboxRestriction", NO_STDIN)),
    _case("stdin-readline", "import sys; sys.stdin.readline()", refused("SandboxRestriction", NO_STDIN)),
    _case("stdin-dunder-stdin", "import sys; sys.__stdin__.read()", refused("SandboxRestriction", NO_STDIN)),
    _case("stdin-os-read-fd-0", "import os; os.read(0, 10)", refused("CapabilityDenied", "stdin")),
    _case(
        "stdin-isatty-is-false",
        "import sys; sys.stdin.isatty()",
        succeeds(lambda r, _: r.value is False, "stdin is no terminal"),
    ),
)
