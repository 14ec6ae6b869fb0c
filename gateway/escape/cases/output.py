"""Output floods: every byte a snippet writes is captured, capped by the guest and again by the host."""

from __future__ import annotations

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    case_maker,
    crash,
    host_call_with,
    limit,
    refused,
    succeeds,
)
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = ["CASES"]

_case = case_maker("output")


_SLACK = 1024  # room for the truncation note


def _stdout_capped(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return result.ok and len(result.stdout.encode()) <= limits.max_stdout_bytes + _SLACK


def _stderr_capped(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return result.ok and len(result.stderr.encode()) <= limits.max_stderr_bytes + _SLACK


def _stdout_truncated(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return (
        _stdout_capped(result, limits)
        and result.stdout_truncated
        and "sandbox.max_stdout_bytes" in result.stdout
    )


def _stderr_truncated(result: ExecutionResult, limits: SandboxLimits) -> bool:
    return (
        _stderr_capped(result, limits)
        and result.stderr_truncated
        and "sandbox.max_stderr_bytes" in result.stderr
    )


def _value_truncated(result: ExecutionResult, limits: SandboxLimits) -> bool:
    shown = result.value_repr or ""
    return (
        result.ok
        and "sandbox.max_value_bytes" in shown
        and len(shown.encode()) <= limits.max_value_bytes + _SLACK
    )


def _message_capped(result: ExecutionResult, limits: SandboxLimits) -> bool:
    error = result.error
    cap = limits.max_value_bytes + _SLACK
    return error is not None and len(error.message) <= cap and len(error.traceback or "") <= cap


def _chunks(cap: int) -> int:
    return cap // 10**5 + 2  # 100 kB writes, enough to pass the cap


_NOTHING_OUT = succeeds(lambda r, _: r.stdout == "" and r.stderr == "", "nothing reached the output")


def _show(payload: dict[str, object]) -> str:
    return host_call_with("@show", payload)


CASES: tuple[EscapeCase, ...] = (
    _case(
        "out-stdout-flood",
        lambda lim: f"for _ in range({_chunks(lim.max_stdout_bytes)}):\n    print('x' * 10**5)",
        succeeds(_stdout_truncated, "stdout cut at sandbox.max_stdout_bytes"),
    ),
    _case(
        "out-stderr-flood",
        lambda lim: (
            f"import sys\nfor _ in range({_chunks(lim.max_stderr_bytes)}):\n"
            "    print('y' * 10**5, file=sys.stderr)"
        ),
        succeeds(_stderr_truncated, "stderr cut at sandbox.max_stderr_bytes"),
    ),
    _case(
        "out-print-loop",
        lambda lim: f"for i in range({lim.max_stdout_bytes // 1000 + 10}):\n    print(i, 'x' * 1000)",
        succeeds(_stdout_truncated, "stdout cut at sandbox.max_stdout_bytes"),
    ),
    _case(
        "out-write-loop",
        "import sys\nfor _ in range(10**4):\n    sys.stdout.write('abcdefgh' * 100)",
        succeeds(_stdout_capped, "stdout capped"),
    ),
    _case(
        "out-real-stdout",
        "import sys\nsys.__stdout__.write('z' * 10**7)",
        succeeds(_stdout_capped, "captured and capped like print()"),
    ),
    _case(
        "out-real-stderr",
        "import sys\nsys.__stderr__.write('z' * 10**7)",
        succeeds(_stderr_capped, "captured and capped like print()"),
    ),
    _case(
        "out-huge-value",
        lambda lim: f"'v' * {lim.max_value_bytes * 4}",
        succeeds(_value_truncated, "value cut at sandbox.max_value_bytes"),
    ),
    _case(
        "out-huge-error-message",
        lambda lim: f"raise ValueError('e' * {lim.max_value_bytes * 4})",
        Expect(("ValueError",), check=_message_capped, what="message and traceback capped"),
    ),
    _case(
        "out-warning-flood",
        lambda lim: (
            "import warnings\n"
            f"for i in range({lim.max_stderr_bytes // 100 + 100}):\n    warnings.warn(str(i))"
        ),
        succeeds(_stderr_capped, "stderr capped"),
    ),
    _case(
        "out-os-write-stdout", "import os\nos.write(1, b'x' * 10**6)", refused("CapabilityDenied", "console")
    ),
    _case(
        "out-os-write-stderr", "import os\nos.write(2, b'x' * 10**6)", refused("CapabilityDenied", "console")
    ),
    _case("out-stdout-set-to-none", "import sys\nsys.stdout = sys.stderr = None\nprint('x')", _NOTHING_OUT),
    _case(
        "out-stdout-redirected-to-memory",
        "import io, sys\nsys.stdout = io.StringIO()\nprint('x' * 10**7)",
        _NOTHING_OUT,
    ),
    _case(
        "out-write-bytes",
        "import sys\nsys.stdout.write(b'x')",
        refused("TypeError", "must be str"),
    ),
    # A lone surrogate cannot cross the component boundary as a string: the guest runtime traps.
    _case("out-lone-surrogate-print", "print('\\ud800')", crash(ok=True)),
    _case("out-lone-surrogate-value", "'\\udcff'", crash(ok=True)),
    _case("out-lone-surrogate-error", "raise ValueError('\\ud800')", crash("ValueError")),
    # What the snippet shows (images, audio, files) is capped in count and in bytes, and checked.
    _case(
        "out-shown-too-many",
        lambda limits: (
            f"for _ in range({limits.max_shown_items + 1}):\n    show(Blob(b'x', mime_type='image/png'))"
        ),
        limit(
            "ShownTooMany",
            check=lambda r, lim: len(r.shown) == lim.max_shown_items,
            what="the first ones kept",
        ),
    ),
    _case(
        "out-shown-too-large",
        lambda limits: f"show(Blob(b'x' * {limits.max_shown_bytes + 1}, mime_type='image/png'))",
        limit("ShownTooLarge", check=lambda r, _: r.shown == [], what="nothing shown"),
    ),
    _case(
        "out-shown-forged-kind",
        _show({"kind": "image", "mime_type": "text/html", "data": "PGI+"}),
        refused("Err", "cannot be shown as image"),
    ),
    _case(
        "out-shown-forged-data",
        _show({"kind": "image", "mime_type": "image/png", "data": "not base64!"}),
        refused("Err", "not base64"),
    ),
    _case(
        "out-shown-forged-mime-type",
        _show({"kind": "resource", "mime_type": "text/html\n", "data": ""}),
        refused("Err", "MIME type"),
    ),
    _case(
        "out-shown-forged-uri",
        host_call_with(
            "@show", {"kind": "resource", "mime_type": "text/plain", "data": "", "uri": "x" * 5000}
        ),
        refused("Err", "uri"),
    ),
)
