"""Run escape cases through the real execution path: each hostile snippet, then a normal one.

Most cases run on a bare `Sandbox` whose tool calls reach in-process probe tools; the policy,
secrets and approvals cases run through a whole `Gateway` in front of the probe MCP server, under
the suite's own policy, answering approvals in rounds as MCP 2026-07-28 clients do. A case passes
when its execution ended the expected way and the target then served normal work. Anything the
host raises is a failure, never an error of the suite: a snippet must not be able to make the
host fail.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, cast

import anyio

from gateway.audit import format_records, read_audit
from gateway.auth import Identity
from gateway.calls import ApprovalNeeded, Gateway, InRounds, Resume
from gateway.config import GatewayConfig, parse_config
from gateway.errors import ToolCallError
from gateway.escape.cases import CASES, EscapeCase
from gateway.escape.cases._model import Seen, clip, succeeds, summarize
from gateway.escape.cases._probe import (
    PROBE_APPROVALS,
    PROBE_CHILD_ENV,
    PROBE_HOST_ENV,
    PROBE_MAX_CONCURRENT_CALLS,
    PROBE_MIDDLEWARE,
    PROBE_MIDDLEWARE_TIMEOUT_SECONDS,
    PROBE_POLICY,
)
from gateway.policy import ApprovalOutcome
from gateway.policy.elicitation import approval_prompt
from gateway.sandbox import Sandbox
from gateway.sandbox.limits import SandboxLimits
from gateway.sandbox.result import ExecutionResult
from gateway.shared import leaf_error
from gateway.testing import InProcessTools

__all__ = [
    "SERVING_CASE",
    "SUITE_MAX_FUEL",
    "SUITE_MAX_TIMEOUT_SECONDS",
    "CaseOutcome",
    "EndlessRounds",
    "GatewayTarget",
    "SandboxTarget",
    "Status",
    "Target",
    "cases_in",
    "gateway_target",
    "probe_gateway_config",
    "probe_tools",
    "run_case",
    "run_suite",
    "still_serves",
    "suite_limits",
]

# The suite runs every CPU and wall-clock case to its limit: capping both keeps it to a minute
# or so whatever the config says, and the cases adapt to the capped values.
SUITE_MAX_FUEL = 1_000_000_000
SUITE_MAX_TIMEOUT_SECONDS = 1.5
_MAX_PROBE_BYTES = 10**8
_PROBE_STARTUP_SECONDS = 60.0
_SETTLE_SECONDS = 10.0  # how long a case's `then` waits for the change `then_when` looks for
_BROKEN_CHILD = "import os, sys; print('auth failed for token', os.environ['PROBE_TOKEN'], file=sys.stderr)"

Status = Literal["pass", "FAIL", "skip"]


def suite_limits(limits: SandboxLimits) -> SandboxLimits:
    """The config's limits, with fuel, wall-clock budget and per-call timeout capped for the suite."""
    timeout = min(limits.timeout_seconds, SUITE_MAX_TIMEOUT_SECONDS)
    return limits.model_copy(
        update={
            "fuel": min(limits.fuel, SUITE_MAX_FUEL),
            "timeout_seconds": timeout,
            # Below the budget, so that the per-call timeout itself is exercised too.
            "tool_call_timeout_seconds": min(limits.tool_call_timeout_seconds, timeout / 2),
            # Cases run one at a time: one execution slot is all the suite uses.
            "max_concurrent_executions": 1,
        }
    )


def probe_tools(fail_message: str = "probe failed") -> InProcessTools:
    """The in-process tools the sandbox's tool-call cases use; each validates its own arguments."""

    async def slow(seconds: object = 0, **_: object) -> str:
        if not isinstance(seconds, int | float):
            raise ToolCallError("seconds must be a number")
        await anyio.sleep(max(0.0, float(seconds)))
        return "done"

    def crash(**_: object) -> None:
        raise RuntimeError("a bug in the tool caller")

    def fail(**_: object) -> None:
        raise ToolCallError(fail_message)

    def echo(**arguments: object) -> dict[str, object]:
        return arguments

    def big(n: object = 0, **_: object) -> str:
        if not isinstance(n, int) or not 0 <= n <= _MAX_PROBE_BYTES:
            raise ToolCallError(f"n must be an integer from 0 to {_MAX_PROBE_BYTES}")
        return "b" * n

    def weird(**_: object) -> object:
        return {1, 2}  # not JSON: the host must refuse to pass it on

    arrived = [0]
    everyone = anyio.Event()

    async def meet(count: object = 1, **_: object) -> int:
        # Calls run one after another never meet: the first waits out the per-call timeout.
        if not isinstance(count, int) or count < 1:
            raise ToolCallError("count must be a positive integer")
        arrived[0] += 1
        if arrived[0] >= count:
            everyone.set()
        await everyone.wait()
        return arrived[0]

    return InProcessTools(
        {
            "probe.echo": echo,
            "probe.big": big,
            "probe.fail": fail,
            "probe.slow": slow,
            "probe.crash": crash,
            "probe.weird": weird,
            "probe.meet": meet,
        }
    )


class Target(Protocol):
    """What cases run against: executes snippets under `limits`."""

    @property
    def limits(self) -> SandboxLimits: ...

    async def execute(
        self,
        code: str,
        *,
        approve: bool = False,
        caller: Identity | None = None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        """Run `code` to its end under `limits` (default: the target's), for `caller` (an authenticated
        HTTP caller) if given; the user approves every call that asks, or (by default) declines it."""
        ...

    @property
    def normal_tool_call(self) -> tuple[str, object]:
        """A normal tool call's expression, and the value it returns."""
        ...

    async def seen(self) -> Seen:
        """What people read since the last call: approval prompts, audit rows, search_docs' overview."""
        ...

    async def overview_until(self, ready: Callable[[str], bool]) -> bool:
        """Wait until search_docs' overview satisfies `ready` (a child's tools changed, say); False if
        it did not within _SETTLE_SECONDS."""
        ...


class SandboxTarget:
    """A bare Sandbox; tool calls reach fresh in-process probe tools."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    @property
    def limits(self) -> SandboxLimits:
        return self.sandbox.limits

    async def execute(
        self,
        code: str,
        *,
        approve: bool = False,
        caller: Identity | None = None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        """Run `code`; nothing asks for approval or knows callers without a gateway, so `approve` and
        `caller` change nothing."""
        return await self.sandbox.execute(code, tool_caller=probe_tools(), limits=limits)

    @property
    def normal_tool_call(self) -> tuple[str, object]:
        return "tools.probe.echo(n=1)", {"n": 1}

    async def seen(self) -> Seen:
        return Seen()  # no approvals, audit log or search_docs without a gateway

    async def overview_until(self, ready: Callable[[str], bool]) -> bool:
        return ready("")  # no search_docs without a gateway: nothing will change


class EndlessRounds(Exception):
    """The gateway paused one execution for approval more often than `approvals.max_rounds` allows."""


class GatewayTarget:
    """A whole Gateway (policy, redaction, approvals, audit) in front of the probe MCP server.

    It answers approvals the way MCP 2026-07-28 clients do (what today's clients negotiate): each
    time the run pauses at a call the user must approve, it keeps the prompt a person would be
    shown, answers for the user, and resumes the run from the state the pause returned.
    """

    def __init__(self, gateway: Gateway, sandbox: Sandbox, audit: Path) -> None:
        self.gateway = gateway
        self._limits = sandbox.limits
        self._audit = audit
        self._prompts: list[str] = []
        self._audit_seen = 0
        self._notes_seen: dict[str, tuple[str, ...]] = {}
        self._caller: Identity | None = None  # of the last execution: what search_docs shows it

    @property
    def limits(self) -> SandboxLimits:
        return self._limits

    async def execute(
        self,
        code: str,
        *,
        approve: bool = False,
        caller: Identity | None = None,
        limits: SandboxLimits | None = None,
    ) -> ExecutionResult:
        """Run `code` round after round for `caller`, answering each approval prompt for the user."""
        answer: ApprovalOutcome = "approved" if approve else "declined"
        self._caller = caller
        outcome = await self.gateway.execute_code(code, None, InRounds(), identity=caller, limits=limits)
        pauses = 0
        while isinstance(outcome, ApprovalNeeded):
            pauses += 1
            self._check_rounds(pauses)
            self._prompts.append(approval_prompt(outcome.tool, outcome.arguments))
            resume = InRounds(Resume(outcome.state, answer))
            outcome = await self.gateway.execute_code(code, None, resume, identity=caller, limits=limits)
        return outcome

    def _check_rounds(self, pauses: int) -> None:
        # A client would keep answering: the gateway's own limit is all that ends a run that pauses
        # at every call, so one that does not hold is a finding, not a loop of the suite's.
        most = self.gateway.config.approvals.max_rounds
        if pauses > most:
            raise EndlessRounds(
                f"the run paused for approval {pauses} times, past approvals.max_rounds ({most})"
            )

    async def seen(self) -> Seen:
        records = read_audit(self._audit).records
        new, self._audit_seen = records[self._audit_seen :], len(records)
        prompts, self._prompts = tuple(self._prompts), []
        rows = format_records(new).splitlines()[1:] if new else []
        overview = await self.gateway.search_docs(identity=self._caller)
        return Seen(prompts, tuple(rows), overview, await self._new_notes())

    async def overview_until(self, ready: Callable[[str], bool]) -> bool:
        with anyio.move_on_after(_SETTLE_SECONDS):
            catalog = self.gateway.catalog()
            while not ready(await self.gateway.search_docs(identity=self._caller)):
                catalog = await self.gateway.catalog_changed(catalog)
            return True
        return False

    async def _new_notes(self) -> dict[str, tuple[str, ...]]:
        """The notes written since the last call, asked of the probe server directly (no policy, no
        audit row): what approved calls really did."""
        try:
            result = await self.gateway.pool.call_tool("probe", "notes", {})
        except ToolCallError as exc:  # shown as a note, so that no check of the notes can pass
            return {_PROBE_UNREACHABLE: (str(exc),)}
        stored = cast("dict[str, list[str]]", result.structured_content or {})
        everything = {name: tuple(texts) for name, texts in stored.items()}
        new = {name: _after(self._notes_seen.get(name, ()), texts) for name, texts in everything.items()}
        self._notes_seen = everything
        return {name: texts for name, texts in new.items() if texts}

    @property
    def normal_tool_call(self) -> tuple[str, object]:
        return "tools.probe.echo(text='still here')", {"result": "still here"}


_PROBE_UNREACHABLE = "<the probe server could not be asked for its notes>"


def _after(seen: tuple[str, ...], texts: tuple[str, ...]) -> tuple[str, ...]:
    """The texts past those already seen; all of them if the probe restarted (and forgot)."""
    return texts[len(seen) :] if texts[: len(seen)] == seen else texts


def probe_gateway_config(limits: SandboxLimits, environ: dict[str, str], audit: Path) -> GatewayConfig:
    """The probe MCP server behind the suite's policy, its secrets expanded from `environ`, audited to
    `audit`."""
    data = {
        "mcpServers": {
            "probe": {
                "command": sys.executable,
                "args": ["-m", "gateway.escape.probe_server"],
                "env": PROBE_CHILD_ENV,
                "startup_timeout_seconds": _PROBE_STARTUP_SECONDS,
                "max_concurrent_calls": PROBE_MAX_CONCURRENT_CALLS,
            },
            # A child whose tool list changes under a rule (the naming cases).
            "shift": {
                "command": sys.executable,
                "args": ["-m", "gateway.escape.probe_server", "shift"],
                "startup_timeout_seconds": _PROBE_STARTUP_SECONDS,
            },
            # A child that fails at once, quoting its token on stderr (as some do on an auth error).
            "broken": {
                "command": sys.executable,
                "args": ["-c", _BROKEN_CHILD],
                "env": PROBE_CHILD_ENV,
                "restart": {"max_attempts": 0},
            },
        },
        "sandbox": limits.model_dump(),
        "policy": PROBE_POLICY,
        "approvals": PROBE_APPROVALS,
        "middleware": PROBE_MIDDLEWARE,
        "middleware_timeout_seconds": PROBE_MIDDLEWARE_TIMEOUT_SECONDS,
        "audit": {"path": str(audit)},
    }
    return parse_config(data, "<sandbox-test probe config>", environ)


@asynccontextmanager
async def gateway_target(limits: SandboxLimits) -> AsyncGenerator[GatewayTarget]:
    """A Gateway over the probe server; the probe's secrets sit in this process's environment meanwhile."""
    # In the host's environment too, so that a case can check what is (not) passed on to children.
    previous = {name: os.environ.get(name) for name in PROBE_HOST_ENV}
    os.environ.update(PROBE_HOST_ENV)
    try:
        with tempfile.TemporaryDirectory(prefix="codemode-sandbox-test-") as scratch:
            audit = Path(scratch) / "audit.jsonl"
            config = probe_gateway_config(limits, dict(os.environ), audit)
            async with Gateway(config) as gateway:
                await gateway.pool.wait_ready(timeout=_PROBE_STARTUP_SECONDS)
                yield GatewayTarget(gateway, await gateway.sandbox(), audit)
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class CaseOutcome:
    """How one case went: `detail` says what happened (or what went wrong)."""

    case: EscapeCase
    status: Status
    detail: str
    ms: float

    @property
    def passed(self) -> bool:
        return self.status != "FAIL"


_SERVES_BODY = "import random\nprint(sum(range(10)))"
_SERVES = f"{_SERVES_BODY}\nrandom.random() < 1.0"
SERVING_CASE = EscapeCase("still-serves", "serving", _SERVES, succeeds(what="after every case"))
"""The final row of every run: the sandbox serves normal work after all the hostile cases."""


# A loaded machine can run a normal call past the suite's short wall-clock limits: such a check is
# tried again (a host that stopped serving fails every attempt), any other failure counts at once.
_SERVE_ATTEMPTS = 3
_WALL_CLOCK_KEYS = (
    "sandbox.timeout_seconds",
    "sandbox.tool_call_timeout_seconds",
    "(middleware_timeout_seconds)",
)


async def still_serves(target: Target) -> str | None:
    """None when a normal snippet and a tool call run correctly, else what went wrong."""
    broken: str | None = None
    for _ in range(_SERVE_ATTEMPTS):
        broken = await _serves_once(target)
        if broken is None or not any(key in broken for key in _WALL_CLOCK_KEYS):
            return broken
    return broken


async def _serves_once(target: Target) -> str | None:
    # One execution checks both, as each costs a fresh instance: a normal snippet and, where the limits
    # allow one, a normal tool call.
    calls = target.limits.max_tool_calls >= 1
    call, answer = target.normal_tool_call
    try:
        normal = await target.execute(
            f"{_SERVES_BODY}\n[random.random() < 1.0, {call}]" if calls else _SERVES
        )
    except Exception as exc:  # the host itself failed: report it, never raise it
        return f"the host raised {_innermost(exc)}"
    value = normal.value
    if not calls:
        served = value is True
    elif isinstance(value, list):
        items = cast(list[object], value)
        served = items == [True, answer] and items[0] is True
    else:
        served = False
    if normal.ok and normal.stdout == "45\n" and served:
        return None
    return f"a normal snippet{' with a tool call' if calls else ''} failed: {summarize(normal)}"


def _innermost(exc: BaseException) -> str:
    """`Type: message` of the real error inside an exception group (task groups wrap what failed)."""
    leaf = leaf_error(exc)
    return f"{type(leaf).__name__}: {clip(leaf)}"


class _HostFailed(Exception):
    """The host raised while running a snippet."""


async def _execute(target: Target, code: str, case: EscapeCase, caller: Identity | None) -> ExecutionResult:
    limits = case.run_limits(target.limits)
    try:
        return await target.execute(code, approve=case.approve, caller=caller, limits=limits)
    except Exception as exc:  # a snippet made the host fail: the most serious finding of all
        raise _HostFailed(f"the host raised {_innermost(exc)}") from exc


async def _judge(target: Target, case: EscapeCase) -> tuple[bool, str]:
    limits = case.run_limits(target.limits)
    try:
        first = await _execute(target, case.source(limits), case, case.caller)
        problem = case.expect.judge(first, limits)
        if problem is None and case.sees is not None:
            seen_wrong = case.sees(await target.seen())
            problem = None if seen_wrong is None else f"{seen_wrong}; the run: {summarize(first)}"
        if problem is not None:
            return False, problem
        if case.then is not None:
            if case.then_when is not None and not await target.overview_until(case.then_when):
                return False, f"search_docs never showed what the next execution needs: {summarize(first)}"
            second = await _execute(target, case.then, case, case.then_caller or case.caller)
            if case.then_check is not None and not case.then_check(first, second):
                return False, f"the next execution saw it: {summarize(second)}"
    except _HostFailed as failed:
        return False, str(failed)
    return True, summarize(first)


async def run_case(target: Target, case: EscapeCase) -> CaseOutcome:
    """Run one hostile snippet (and its follow-up), then check that the target still serves."""
    reason = case.needs(case.run_limits(target.limits)) if case.needs is not None else None
    if reason is not None:
        return CaseOutcome(case, "skip", reason, 0.0)
    started = time.monotonic()
    await target.seen()  # what earlier cases left behind is not this case's
    contained, detail = await _judge(target, case)
    ms = (time.monotonic() - started) * 1000
    broken = await still_serves(target)
    if broken is not None:
        contained, detail = False, f"{detail}; then it stopped serving: {broken}"
    return CaseOutcome(case, "pass" if contained else "FAIL", detail, round(ms, 1))


def cases_in(categories: Iterable[str] | None) -> tuple[EscapeCase, ...]:
    """Every case, or those in `categories`."""
    if categories is None:
        return CASES
    chosen = set(categories)
    return tuple(case for case in CASES if case.category in chosen)


async def _run_all(
    target: Target, cases: Sequence[EscapeCase], report: Callable[[CaseOutcome], None]
) -> None:
    for case in cases:
        report(await run_case(target, case))


async def run_suite(
    sandbox: Sandbox,
    cases: Iterable[EscapeCase],
    on_outcome: Callable[[CaseOutcome], None] | None = None,
) -> list[CaseOutcome]:
    """Run `cases` one at a time (gateway cases last, on a Gateway), then the `still-serves` check."""
    outcomes: list[CaseOutcome] = []

    def report(outcome: CaseOutcome) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    chosen = list(cases)
    await _run_all(SandboxTarget(sandbox), [c for c in chosen if c.target == "sandbox"], report)
    through_gateway = [c for c in chosen if c.target == "gateway"]
    if through_gateway:
        try:
            async with gateway_target(sandbox.limits) as target:
                await _run_all(target, through_gateway, report)
        except Exception as exc:  # the probe server did not start: every gateway case failed to run
            ran = {outcome.case.id for outcome in outcomes}
            detail = f"the gateway over the probe server failed: {_innermost(exc)}"
            for case in through_gateway:
                if case.id not in ran:
                    report(CaseOutcome(case, "FAIL", detail, 0.0))
    started = time.monotonic()
    broken = await still_serves(SandboxTarget(sandbox))
    ms = round((time.monotonic() - started) * 1000, 1)
    detail = broken or "a normal snippet and a tool call ran correctly"
    report(CaseOutcome(SERVING_CASE, "FAIL" if broken else "pass", detail, ms))
    return outcomes
