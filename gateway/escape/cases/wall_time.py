"""Waiting: sleeps, busy-waits and blocking primitives all end within the wall-clock budget.

The clock is the host's (`@clock`); a sleep is a host wait bounded by what is left of the budget,
and one that would outlast it is refused at once. Waits that would read WASI's clock trap.
"""

from __future__ import annotations

import time

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    limit,
    refused,
    succeeds,
    value_is,
    within_budget,
)
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("wall-time")
_OUT_OF_TIME = limit("WallTimeExceeded", check=within_budget, what="ended within the budget")
_BUSY = limit("WallTimeExceeded", "FuelExhausted", check=within_budget, what="ended within the budget")
_CLOCK_STUB = refused("CapabilityDenied", "clock")


def _close_to_host_time(result: ExecutionResult, _limits: object) -> bool:
    return result.ok and isinstance(result.value, int | float) and abs(result.value - time.time()) < 60


CASES: tuple[EscapeCase, ...] = (
    _case("wall-sleep-forever", "import time\ntime.sleep(10**6)", limit("WallTimeExceeded")),
    _case(
        "wall-sleep-just-past-budget",
        lambda lim: f"import time\ntime.sleep({lim.timeout_seconds + 0.1})",
        limit("WallTimeExceeded"),
    ),
    _case("wall-sleep-negative", "import time\ntime.sleep(-1)", refused("ToolError", "non-negative")),
    _case("wall-sleep-nan", "import time\ntime.sleep(float('nan'))", refused("TypeError", "JSON values")),
    _case(
        "wall-sleep-infinity", "import time\ntime.sleep(float('inf'))", refused("TypeError", "JSON values")
    ),
    _case("wall-sleep-huge-int", "import time\ntime.sleep(10**400)", refused("OverflowError")),
    _case(
        "wall-sleep-chain",
        lambda lim: f"import time\nwhile True:\n    time.sleep({lim.timeout_seconds / 6:.3f})",
        _OUT_OF_TIME,
    ),
    _case(
        "wall-asyncio-sleep-forever", "import asyncio\nawait asyncio.sleep(10**6)", limit("WallTimeExceeded")
    ),
    _case(
        # Side by side (asyncio.gather) sleeps overlap; one after another they add up past the budget.
        "wall-asyncio-sleeps-add-up",
        lambda lim: (
            f"import asyncio\nfor _ in range(100):\n    await asyncio.sleep({lim.timeout_seconds / 6:.3f})"
        ),
        _OUT_OF_TIME,
    ),
    _case(
        "wall-busy-wait-monotonic",
        "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 10**6:\n    pass",
        _BUSY,
    ),
    _case("wall-event-wait", "import threading\nthreading.Event().wait(10**6)", _CLOCK_STUB),
    _case(
        "wall-lock-deadlock",
        "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()",
        _CLOCK_STUB,
    ),
    _case(
        "wall-condition-wait",
        "import threading\nc = threading.Condition()\nwith c:\n    c.wait(10**6)",
        _CLOCK_STUB,
    ),
    _case(
        "wall-event-loop-run-forever",
        "import asyncio\nasyncio.new_event_loop().run_forever()",
        refused("RuntimeError", "nothing can wake them"),
    ),
    _case(
        "wall-asyncio-event-wait",
        "import asyncio\nawait asyncio.Event().wait()",
        Expect(("AttributeError", "RuntimeError")),
    ),
    # Answered from the host's clock (asyncio's loop asks for it), never from the WASI stub.
    _case(
        "wall-get-clock-info",
        "import time\ntime.get_clock_info('monotonic').implementation",
        value_is("host"),
    ),
    _case("wall-os-times", "import os\nos.times()", _CLOCK_STUB),
    _case("wall-clock-gettime", "import time\ntime.clock_gettime(0)", refused("OSError", "Invalid argument")),
    _case(
        "wall-clock-is-the-hosts",
        "import time\ntime.time()",
        succeeds(_close_to_host_time, "within a minute of the host's clock"),
    ),
    _case(
        "wall-monotonic-never-goes-back",
        "import time\nt = [time.monotonic() for _ in range(300)]\nall(a <= b for a, b in zip(t, t[1:]))",
        value_is(True),
    ),
)
