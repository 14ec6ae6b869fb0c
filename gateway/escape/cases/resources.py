"""CPU, memory and stack exhaustion: every one ends in a limit that names its config key.

Which limit ends a case first can depend on the config (more fuel lets a quadratic loop reach
the memory cap), so such cases accept any of the limits they can hit.
"""

from __future__ import annotations

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    limit,
    refused,
)

__all__ = ["CASES"]

_cpu = case_maker("cpu")
_mem = case_maker("memory")
_stack = case_maker("stack")
_FUEL = limit("FuelExhausted")
_FUEL_OR_MEMORY = limit("FuelExhausted", "MemoryLimitExceeded")
_MEMORY = limit("MemoryLimitExceeded")
_MEMORY_OR_WALL_TIME = limit("MemoryLimitExceeded", "WallTimeExceeded")
_ANY_LIMIT = limit("FuelExhausted", "MemoryLimitExceeded", "WallTimeExceeded", "StackExhausted")
_STACK = limit("StackExhausted")
_DEEP = "x = []\nfor _ in range(10**5):\n    x = [x]\n"

CASES: tuple[EscapeCase, ...] = (
    _cpu("cpu-spin", "while True:\n    pass", _FUEL),
    _cpu("cpu-bigint-modmul", "x = 7\nwhile True:\n    x = x * x % (10**4000 + 7)", _FUEL),
    _cpu("cpu-huge-power", "x = 10 ** (10 ** 8)", _FUEL_OR_MEMORY),
    _cpu("cpu-power-tower", "2 ** 10 ** 10", _FUEL_OR_MEMORY),
    _cpu("cpu-modular-power", "pow(3, 10**7, 10**100000)", _FUEL),
    _cpu("cpu-factorial", "import math\nmath.factorial(10**7)", _FUEL_OR_MEMORY),
    _cpu("cpu-regex-backtracking", "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", _FUEL),
    _cpu("cpu-regex-compile-nested", "import re\nre.compile('(' * 10**5 + ')' * 10**5)", _ANY_LIMIT),
    _cpu("cpu-sort-with-key", "sorted(range(5 * 10**6), key=lambda x: -x)[0]", _FUEL_OR_MEMORY),
    _cpu("cpu-join-generator", "' '.join(str(i) for i in range(10**8))", _FUEL_OR_MEMORY),
    _cpu("cpu-infinite-generator", "import itertools\nsum(itertools.count())", _FUEL),
    _cpu(
        "cpu-exception-loop",
        "while True:\n    try:\n        raise ValueError\n    except ValueError:\n        pass",
        _FUEL,
    ),
    # The trap is not a Python exception: no handler can swallow it.
    _cpu(
        "cpu-catch-everything",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass",
        _FUEL,
    ),
    _cpu(
        "cpu-catch-in-finally",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    finally:\n        while True:\n            pass",
        _FUEL,
    ),
    _cpu(
        "cpu-int-to-str-digit-guard",
        "str(10**100000)",
        refused("ValueError", "integer string conversion"),
    ),
    _cpu(
        "cpu-str-to-int-digit-guard", "int('9' * 100000)", refused("ValueError", "integer string conversion")
    ),
    _cpu(
        "cpu-digit-guard-lifted",
        "import sys\nsys.set_int_max_str_digits(0)\nlen(str(10 ** (10**6)))",
        _FUEL,
    ),
    _cpu(
        "cpu-decimal-precision",
        "import decimal\ndecimal.getcontext().prec = 10**7\ndecimal.Decimal(1) / 7",
        _FUEL_OR_MEMORY,
    ),
    _mem("mem-huge-bytearray", lambda lim: f"bytearray({lim.memory_bytes})", _MEMORY),
    # Growing to the limit a megabyte at a time pays a page fault per page touched, so on a loaded
    # machine the wall time can run out first. Either limit contains it; the two single allocations
    # below pin that the memory limit itself holds.
    _mem("mem-growing-list", "x = []\nwhile True:\n    x.append(bytearray(10**6))", _MEMORY_OR_WALL_TIME),
    _mem("mem-list-multiply", lambda lim: f"[0] * {lim.memory_bytes}", _MEMORY),
    _mem("mem-string-multiply", lambda lim: f"'a' * {lim.memory_bytes}", _MEMORY),
    _mem("mem-bytes-concatenation", "x = b''\nwhile True:\n    x += b'a' * 10**6", _FUEL_OR_MEMORY),
    _mem(
        "mem-deep-dicts",
        "d = cur = {}\nwhile True:\n    cur['k'] = {}\n    cur = cur['k']",
        _FUEL_OR_MEMORY,
    ),
    _mem("mem-sorted-range", "sorted(range(10**8))", _MEMORY),
    _mem("mem-array-of-doubles", "import array\narray.array('d', range(10**8))", _FUEL_OR_MEMORY),
    _mem("mem-dict-comprehension", "{i: i for i in range(10**8)}", _FUEL_OR_MEMORY),
    _mem("mem-set-of-range", "set(range(10**8))", _FUEL_OR_MEMORY),
    _mem(
        "mem-zlib-bomb",
        "import zlib\nz = zlib.compress(bytes(2 * 10**7))\n"
        "out = []\nwhile True:\n    out.append(zlib.decompress(z))",
        _FUEL_OR_MEMORY,
    ),
    # MemoryError is catchable in Python; a snippet that swallows it still runs out of something.
    _mem(
        "mem-swallow-memoryerror",
        "x = []\nwhile True:\n    try:\n        x.append(bytearray(10**7))\n"
        "    except MemoryError:\n        pass",
        limit("FuelExhausted", "WallTimeExceeded", "MemoryLimitExceeded"),
    ),
    _mem(
        "mem-bytearray-extend",
        "b = bytearray()\nwhile True:\n    b.extend(b'x' * 10**6)",
        _FUEL_OR_MEMORY,
    ),
    _mem("mem-index-overflow", "'a' * 10**10", refused("OverflowError")),
    _mem("mem-bytes-overflow", "bytes(2**31)", refused("OverflowError")),
    _stack(
        "stack-json-nesting",
        "import json\njson.loads('[' * 10**6)",
        _STACK,
    ),
    _stack(
        "stack-recursion-limit",
        "def f(n):\n    return f(n + 1)\nf(0)",
        refused("RecursionError", "recursion"),
    ),
    _stack(
        "stack-recursion-limit-raised",
        "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1) + 1\nf(0)",
        limit("FuelExhausted", "MemoryLimitExceeded", "StackExhausted"),
    ),
    # The parser reports nesting past its own stack as a MemoryError.
    _stack("stack-eval-parentheses", "eval('(' * 10**6)", limit("MemoryLimitExceeded", "StackExhausted")),
    _stack(
        "stack-eval-unary-chain", "eval('-' * 10**5 + '1')", limit("MemoryLimitExceeded", "StackExhausted")
    ),
    _stack("stack-eval-binop-chain", "eval('1+' * 50000 + '1')", _STACK),
    _stack(
        "stack-ast-parse",
        "import ast\nast.parse('[' * 10**5)",
        limit("MemoryLimitExceeded", "StackExhausted"),
    ),
    _stack(
        "stack-literal-eval",
        "import ast\nast.literal_eval('-' * 10**5 + '1')",
        limit("MemoryLimitExceeded", "StackExhausted"),
    ),
    _stack("stack-compile-attribute-chain", "compile('a' + '.b' * 10**5, 's', 'eval')", _STACK),
    _stack("stack-repr-nested-lists", _DEEP + "len(repr(x))", _STACK),
    _stack("stack-json-dumps-nested", "import json\n" + _DEEP + "len(json.dumps(x))", _STACK),
    _stack("stack-deepcopy", "import copy\n" + _DEEP + "copy.deepcopy(x)", refused("RecursionError")),
    _stack("stack-tomllib", "import tomllib\ntomllib.loads('a=' + '[' * 10**5)", refused("RecursionError")),
    _stack(
        "stack-xml-nesting",
        "import xml.etree.ElementTree as ET\nET.fromstring('<a>' * 10**5 + '</a>' * 10**5)",
        _STACK,
    ),
    _stack(
        "stack-generator-chain",
        "g = iter([1])\nfor _ in range(10**5):\n    g = (x for x in g)\nnext(g)",
        Expect(("FuelExhausted", "StackExhausted"), ok=True),
    ),
    _stack(
        "stack-deep-indentation",
        "exec(''.join(' ' * i + 'if 1:\\n' for i in range(200)) + ' ' * 200 + 'pass\\n')",
        refused("IndentationError", "too many levels of indentation"),
    ),
    _stack(
        "stack-exception-chain",
        "e = None\nfor i in range(10**4):\n    try:\n        raise ValueError(i) from e\n"
        "    except ValueError as x:\n        e = x\nraise e",
        limit("FuelExhausted", "WallTimeExceeded", "MemoryLimitExceeded", "StackExhausted"),
    ),
)
