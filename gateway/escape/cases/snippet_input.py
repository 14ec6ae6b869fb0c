"""The snippet itself: its size, its text, and the ways it can end."""

from __future__ import annotations

from gateway.escape.cases._model import (
    EscapeCase,
    Expect,
    any_outcome,
    case_maker,
    limit,
    refused,
    succeeds,
)

__all__ = ["CASES"]

_case = case_maker("input")

CASES: tuple[EscapeCase, ...] = (
    _case(
        "code-too-large", lambda lim: "x = '" + "a" * (lim.max_code_bytes + 1) + "'", limit("CodeTooLarge")
    ),
    _case("code-syntax-error-quotes-the-snippet", "x = (1 +", refused("SyntaxError", "was never closed")),
    _case("code-null-byte", "x = 1\x00", refused("SyntaxError", "null")),
    # A lone surrogate reaches the gateway from a client's JSON ("\ud800") as easily as any text.
    _case("code-lone-surrogate", "x = '\ud800'\n'ok'", any_outcome()),
    _case("code-byte-order-mark", "\ufeff1 + 1", Expect(("SyntaxError",), ok=True)),
    _case("code-only-a-comment", "# nothing to run", succeeds(lambda r, _: r.value is None, "no value")),
    _case("code-yield-at-top-level", "yield 1", refused("SyntaxError", "outside function")),
    _case("code-return-at-top-level", "return 1", refused("SyntaxError", "outside function")),
    _case("exit-nonzero", "import sys; sys.exit(3)", refused("SystemExit", "3")),
    _case(
        "exit-zero", "import sys\nprint('before')\nsys.exit(0)", succeeds(lambda r, _: r.stdout == "before\n")
    ),
    _case("exit-with-message", "raise SystemExit('bye')", refused("SystemExit", "bye")),
    _case("exit-quit-builtin", "quit(5)", refused("SystemExit", "5")),
    _case("exit-generator-exit", "raise GeneratorExit('x')", refused("GeneratorExit")),
    _case(
        "exit-base-exception-subclass",
        "class Escape(BaseException):\n    pass\nraise Escape('out')",
        refused("Escape", "out"),
    ),
)
