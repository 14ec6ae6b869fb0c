"""What an escape case is: a hostile snippet, and what containing it looks like."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from gateway.auth import Identity
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult

__all__ = [
    "ALLOWLIST",
    "ANY_ERROR",
    "AUDIT_OFF",
    "FIND_CLASS",
    "HANG_SECONDS",
    "HOST_IMPORT",
    "LIMIT_KEYS",
    "LOAD_BUILTIN",
    "NATIVE",
    "NO_FS",
    "NO_NET",
    "NO_PROC",
    "NO_STDIN",
    "REFUSE_OFF",
    "RESOURCE_LIMITS",
    "ROOMY_CLOCK_SECONDS",
    "CaseMaker",
    "Check",
    "EscapeCase",
    "Expect",
    "Seen",
    "SeenCheck",
    "Source",
    "Target",
    "any_outcome",
    "case_maker",
    "clip",
    "crash",
    "host_call_with",
    "limit",
    "needs_fuel",
    "needs_tool_calls",
    "refused",
    "roomy_clock",
    "succeeds",
    "summarize",
    "value_is",
    "within_budget",
    "wrote_nothing",
]

Target = Literal["sandbox", "gateway"]
"""What a case runs against: a bare Sandbox with in-process probe tools, or a whole Gateway."""

Check = Callable[[ExecutionResult, SandboxLimits], bool]
"""A check on an accepted result, given the limits the suite ran with."""

Source = str | Callable[[SandboxLimits], str]
"""A snippet, or a function of the limits that writes one (a size just past a cap, say)."""


@dataclass(frozen=True)
class Seen:
    """What people read about one execution: approval prompts, the audit table's rows, search_docs;
    and what reached the probe server: the notes `probe.write_note` was given."""

    prompts: tuple[str, ...] = ()
    audit_rows: tuple[str, ...] = ()
    overview: str = ""  # search_docs with an empty query, after the execution
    # Each note name with the texts written under it during the execution, in order: the witness of
    # what an approved call did, even when the run was stopped before it could report anything.
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])


SeenCheck = Callable[[Seen], str | None]
"""None when what people read is as it should be, else what is wrong with it."""

# A limit error must name the config key behind it, so the model (and the team) can act on it.
LIMIT_KEYS: dict[str, str] = {
    "FuelExhausted": "sandbox.fuel",
    "WallTimeExceeded": "sandbox.timeout_seconds",
    "MemoryLimitExceeded": "sandbox.memory_bytes",
    "StackExhausted": "sandbox.max_wasm_stack_bytes",
    "ToolCallLimitExceeded": "sandbox.max_tool_calls",
    "CodeTooLarge": "sandbox.max_code_bytes",
    "ShownTooMany": "sandbox.max_shown_items",
    "ShownTooLarge": "sandbox.max_shown_bytes",
}

# A trap in the guest (a stub reached, a runtime panic, corrupted interpreter state): the
# execution ends and the gateway serves on. Which of the two the host reports depends on which
# stub the trap's backtrace passed through (a Rust panic writes to stderr first, for one).
_TRAPS = ("CapabilityDenied", "GuestCrashed")
ANY_ERROR = "*"

# The limits that stop a runaway. Which one fires first depends on the config (more fuel lets a loop
# reach the memory cap) and on the machine's load (the wall clock runs on while the host waits for a
# core), so a case stopped by any of them is contained, whichever the case was written to meet.
RESOURCE_LIMITS = ("FuelExhausted", "WallTimeExceeded", "MemoryLimitExceeded", "StackExhausted")
_LOAD_DEPENDENT = "WallTimeExceeded"

HANG_SECONDS = 30.0
"""How long an execution may hold the host before the suite calls it held: far past any budget the
suite runs with (it caps the budget at 1.5 s, ROOMY_CLOCK_SECONDS for a case given a roomy clock) plus
a loaded machine's delay, far below what the cases ask the host to wait for (10**6-second sleeps,
checks quadratic in 100,000 items)."""

ROOMY_CLOCK_SECONDS = 20.0
"""The run's budget for a case whose claim is another limit than the wall clock (its per-call timeout
is half of it): far past what such a case takes on a loaded machine, well below HANG_SECONDS."""


def roomy_clock(limits: SandboxLimits) -> SandboxLimits:
    """`limits` with a wall clock that cannot fire before the limit a case is about, whatever the load."""
    return limits.model_copy(
        update={
            "timeout_seconds": ROOMY_CLOCK_SECONDS,
            "tool_call_timeout_seconds": ROOMY_CLOCK_SECONDS / 2,
        }
    )


# What the prelude's refusals say: the snippet learns which capability is missing.
NO_FS = "the sandbox has no filesystem"
NO_NET = "the sandbox has no network"
NO_PROC = "the sandbox has no processes"
HOST_IMPORT = "from wit_world.imports import host\n"
"""The first line of a case that calls the one host import directly, past the guest's proxies."""
NO_STDIN = "the sandbox has no stdin"
NATIVE = "the sandbox runs no native code"
ALLOWLIST = "it can import: "

# Snippet fragments that hostile cases build on.
AUDIT_OFF = (
    "import sys\nsys.modules['guest._capabilities']._audit.__code__ = (lambda event, args: None).__code__\n"
)
"""Neuter the prelude's audit hook (hooks cannot be removed, but their code can be swapped)."""

REFUSE_OFF = "import sys\nsys.modules['guest._capabilities']._refuse = lambda *args: None\n"
"""Make every prelude refusal a no-op, so only the wasm boundary is left to hold."""

FIND_CLASS = """
def find_class(name):
    todo, seen = [object], set()
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        for sub in type.__subclasses__(cls):
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    raise LookupError(name)
"""
"""`find_class(name)`: walk `object.__subclasses__()` for a class the snippet cannot import."""

LOAD_BUILTIN = (
    FIND_CLASS
    + """
import importlib._bootstrap as _bootstrap
def load_builtin(name):
    return _bootstrap._load(find_class('BuiltinImporter').find_spec(name))
"""
)
"""`load_builtin(name)`: a fresh copy of a C module compiled into the interpreter, past the import seal."""


def clip(text: object, limit: int = 160) -> str:
    """One line of at most `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def summarize(result: ExecutionResult) -> str:
    """What an execution did, in one short line."""
    if result.error is not None:
        return f"{result.error.type}: {clip(result.error.message, 120)}"
    shown = result.value_repr if result.value_repr is not None else repr(result.value)
    extra = f", stdout {len(result.stdout)} chars" if result.stdout else ""
    return f"ok: {clip(shown, 100)}{extra}"


@dataclass(frozen=True)
class Expect:
    """What containment looks like for one case."""

    errors: tuple[str, ...] = ()  # the execution may fail with one of these (ANY_ERROR: with anything)
    says: str = ""  # ... its message naming this (a limit error must also name its config key)
    ok: bool = False  # the execution may also succeed
    check: Check | None = None  # and then this holds on the accepted result, failed or not
    what: str = ""  # `check` in words, for reports

    def accepts(self, error_type: str) -> bool:
        """Whether an execution failing with `error_type` can be contained as expected."""
        return error_type in self.errors or ANY_ERROR in self.errors

    def describe(self) -> str:
        """The expectation in a few words (for `sandbox-test --list` and failure details)."""
        if ANY_ERROR in self.errors:
            text = "any result from the host"
        else:
            options = [" or ".join(self.errors) + (f" saying {self.says!r}" if self.says else "")]
            text = " or ".join([*(options if self.errors else []), *(["success"] if self.ok else [])])
        return f"{text} ({self.what})" if self.what else text

    def stopped_first_by(self, error_type: str) -> bool:
        """Whether `error_type` is a limit that contains the case although the case looks for another
        outcome: the wall clock (its firing order depends on the load) for any case, and any resource
        limit for a case that looks for one."""
        if self.accepts(error_type) or error_type not in RESOURCE_LIMITS:
            return False
        return error_type == _LOAD_DEPENDENT or any(e in RESOURCE_LIMITS for e in self.errors)

    def judge(self, result: ExecutionResult, limits: SandboxLimits) -> str | None:
        """None when `result` is contained (as expected, or by a limit that fired first), else what went
        wrong."""
        error = result.error
        if result.ms > HANG_SECONDS * 1000:
            held = f"{result.ms / 1000:.0f} s, past the suite's {HANG_SECONDS:g} s"
            return f"the host was held {held}: it waited for what the snippet asked: {summarize(result)}"
        if error is not None and self.stopped_first_by(error.type):
            key = LIMIT_KEYS[error.type]
            return (
                None
                if key in error.message
                else f"expected the message to name {key!r}, got {summarize(result)}"
            )
        if error is None:
            if not self.ok:
                return f"expected {self.describe()}, but the snippet succeeded: {summarize(result)}"
        elif not self.accepts(error.type):
            return f"expected {self.describe()}, got {summarize(result)}"
        else:
            key = LIMIT_KEYS.get(error.type, "")
            if self.says not in error.message or key not in error.message:
                wanted = " and ".join(repr(s) for s in (self.says, key) if s)
                return f"expected the message to name {wanted}, got {summarize(result)}"
        if self.check is not None and not self.check(result, limits):
            return f"check failed ({self.what or 'custom check'}): {summarize(result)}"
        return None


def refused(error: str, says: str = "") -> Expect:
    """The snippet gets `error` (a Python exception or a gateway error) naming `says`."""
    return Expect((error,), says)


def limit(*errors: str, check: Check | None = None, what: str = "") -> Expect:
    """A limit ends the execution: one of `errors`, each naming its config key."""
    return Expect(errors, check=check, what=what)


def crash(*also: str, ok: bool = False, what: str = "") -> Expect:
    """The guest traps (or raises one of `also`): contained, whichever way the host labels it."""
    return Expect((*_TRAPS, *also), ok=ok, what=what)


def succeeds(check: Check | None = None, what: str = "") -> Expect:
    """The snippet runs to the end and `check` holds: the attempt found nothing to escape through."""
    return Expect(ok=True, check=check, what=what)


def value_is(expected: object) -> Expect:
    """The snippet succeeds with exactly this value."""
    return succeeds(lambda r, _: r.value == expected, f"value == {clip(repr(expected), 60)}")


def any_outcome(what: str = "the host returns a result and serves on") -> Expect:
    """Any result at all: what must hold is that the host answered (did not raise) and serves on."""
    return Expect((ANY_ERROR,), ok=True, what=what)


def host_call_with(service: str, payload: dict[str, object]) -> str:
    """Snippet: `payload` sent to the host service `service` (`@show`, ...) straight through the import."""
    return HOST_IMPORT + f"host.call({service!r}, {json.dumps(json.dumps(payload))})"


def wrote_nothing(seen: Seen) -> str | None:
    """No note reached the probe (gateway cases)."""
    return f"no call should have reached the probe, it got {dict(seen.notes)}" if seen.notes else None


def within_budget(result: ExecutionResult, limits: SandboxLimits) -> bool:
    """The host did not wait for what the snippet asked: it answered within HANG_SECONDS, whatever the
    machine's load (every judgment checks this; cases name it where it is the point)."""
    return result.ms <= HANG_SECONDS * 1000


def needs_tool_calls(count: int) -> Callable[[SandboxLimits], str | None]:
    """Skip the case when the config allows fewer than `count` tool calls per execution."""

    def check(limits: SandboxLimits) -> str | None:
        if limits.max_tool_calls >= count:
            return None
        return f"needs {count} tool call(s); sandbox.max_tool_calls is {limits.max_tool_calls}"

    return check


def needs_fuel(fuel: int) -> Callable[[SandboxLimits], str | None]:
    """Skip the case when the config's fuel cannot finish it (a scan of the whole heap, say)."""

    def check(limits: SandboxLimits) -> str | None:
        return None if limits.fuel >= fuel else f"needs {fuel:,} fuel; sandbox.fuel is {limits.fuel:,}"

    return check


@dataclass(frozen=True)
class EscapeCase:
    """One hostile snippet and what containing it looks like."""

    id: str
    category: str
    code: Source
    expect: Expect
    # A second snippet, run in a fresh execution right after; `then_check` sees both results
    # (tampering that must not survive, entropy that must differ).
    then: str | None = None
    then_check: Callable[[ExecutionResult, ExecutionResult], bool] | None = None
    # Why a config cannot run the case (it is then skipped, never failed), or None.
    needs: Callable[[SandboxLimits], str | None] | None = None
    # "gateway": through a whole Gateway (policy, redaction) in front of the probe MCP server.
    target: Target = "sandbox"
    # A check on what people read about the first execution (gateway cases): prompts, audit rows.
    sees: SeenCheck | None = None
    # The user's answer to every approval prompt of the case's executions (gateway cases): approve,
    # or (by default) decline, which the snippet sees as a ToolError.
    approve: bool = False
    # Who runs it (gateway cases): an authenticated HTTP caller, whom `policy.roles` may name; or None,
    # a caller nobody identified (stdio).
    caller: Identity | None = None
    # Who runs `then`, when another caller than `caller` (one caller must never reach another's).
    then_caller: Identity | None = None
    # Gateway cases: `then` runs once search_docs' overview satisfies this (the gateway has seen a
    # child's tool list change, say), waited for a bounded time.
    then_when: Callable[[str], bool] | None = None
    # The limits its executions run under, made from the suite's (`roomy_clock` for a case whose claim
    # is another limit, so that a loaded machine's wall clock cannot decide it); None: the suite's.
    limits: Callable[[SandboxLimits], SandboxLimits] | None = None

    def run_limits(self, suite: SandboxLimits) -> SandboxLimits:
        """The limits the case runs under, given the suite's."""
        return suite if self.limits is None else self.limits(suite)

    def source(self, limits: SandboxLimits) -> str:
        """The snippet to run under `limits`."""
        code = self.code if isinstance(self.code, str) else self.code(limits)
        return code.strip("\n") + "\n"


class CaseMaker:
    """`case(id, code, expect, ...)` with the category (and target) filled in."""

    def __init__(self, category: str, target: Target = "sandbox") -> None:
        self.category = category
        self.target: Target = target

    def __call__(
        self,
        id: str,
        code: Source,
        expect: Expect,
        *,
        then: str | None = None,
        then_check: Callable[[ExecutionResult, ExecutionResult], bool] | None = None,
        needs: Callable[[SandboxLimits], str | None] | None = None,
        sees: SeenCheck | None = None,
        approve: bool = False,
        caller: Identity | None = None,
        then_caller: Identity | None = None,
        then_when: Callable[[str], bool] | None = None,
        limits: Callable[[SandboxLimits], SandboxLimits] | None = None,
    ) -> EscapeCase:
        return EscapeCase(
            id,
            self.category,
            code,
            expect,
            then,
            then_check,
            needs,
            self.target,
            sees,
            approve,
            caller,
            then_caller,
            then_when,
            limits,
        )


def case_maker(category: str, target: Target = "sandbox") -> CaseMaker:
    """`case(id, code, expect, ...)` with the category (and target) filled in."""
    return CaseMaker(category, target)
