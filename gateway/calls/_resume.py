"""An execution paused for approval, as the state the client carries to the round that resumes it.

On MCP 2026-07-28 a server may not ask the user mid-call: `execute_code` answers "input required"
with the approval prompt and a `requestState`, and the client retries with the user's answer and
that state. The state is the paused execution: the seed and journal of host answers that let any
process replay the execution to its paused call without touching a child (`gateway.sandbox.HostJournal`).

The state is plaintext here. The server's `RequestStateBoundary` (the SDK's) seals it with AES-GCM
under the approvals key and binds it to the `execute_code` call (its code and timeout), to this
service and to the client's principal, with an expiry; a state that was altered, is stale, or was
minted for another call never reaches this module. What this module adds: the binding to the
paused call (its index, tool and argument digest) and to this build of the sandbox, single use,
and the caps (`approvals.max_state_bytes`, `approvals.max_rounds`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
import zlib
from dataclasses import dataclass
from typing import Any

from gateway.errors import ApprovalLimitExceeded, GuestCrashed, ResumeRefused, StateUnavailable
from gateway.policy import ApprovalOutcome
from gateway.policy.config import ApprovalsConfig
from gateway.sandbox.journal import HostAnswer, HostJournal, PausedCall
from gateway.state import LocalSpentApprovals, SpentApprovals

__all__ = [
    "JOURNAL_BYTES_PER_STATE_BYTE",
    "ApprovalNeeded",
    "PausedExecution",
    "Resume",
    "SpentStates",
    "as_refusal",
    "code_sha256",
    "paused_execution",
    "state_too_large",
]

_VERSION = 2
JOURNAL_BYTES_PER_STATE_BYTE = 16
"""An execution stops journaling past this many raw bytes per byte of `max_state_bytes` (JSON results
compress well, but not that well): what an execution holds in memory is bounded too."""


def code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ApprovalNeeded:
    """An execution paused at a call the user must approve: what to ask, and the state to resume it."""

    tool: str
    arguments: dict[str, Any]
    state: str


@dataclass(frozen=True)
class Resume:
    """What a client's retry carries: the paused execution's state, and the user's answer for its call."""

    state: str
    answer: ApprovalOutcome


@dataclass(frozen=True)
class PausedExecution:
    """Everything a later round needs to replay a paused execution to its paused call, in any process."""

    execution_id: str
    began_at: float  # when the execution's first round began (wall clock)
    round: int  # the round that paused; the one resuming it is round + 1
    code_sha256: str
    component_sha256: str
    nonce: str  # single use: a state is resumed once
    seed: str
    answers: tuple[HostAnswer, ...]
    paused: PausedCall  # as the guest made it: the first call the replay must reach
    shown_tool: str  # the tool the user is shown
    shown_digest: str  # of the wire arguments the user is shown (and approves, or not)
    quota: dict[str, int]
    settled: dict[int, str]  # answers of calls in flight when the execution paused, not yet received

    def journal(self, max_bytes: int) -> HostJournal:
        """Replays this execution's answers, then checks its first live call is the paused one."""
        return HostJournal(self.seed, self.answers, self.paused, settled=self.settled, max_bytes=max_bytes)

    def dump(self, config: ApprovalsConfig) -> str:
        """The state text, or ApprovalLimitExceeded if it is over `approvals.max_state_bytes`."""
        data = {
            "v": _VERSION,
            "id": self.execution_id,
            "began_at": self.began_at,
            "round": self.round,
            "code": self.code_sha256,
            "component": self.component_sha256,
            "nonce": self.nonce,
            "seed": self.seed,
            "answers": [answer.to_wire() for answer in self.answers],
            "paused": [self.paused.name, self.paused.digest],
            "shown": [self.shown_tool, self.shown_digest],
            "quota": self.quota,
            "settled": [[call_id, item] for call_id, item in self.settled.items()],
        }
        raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        text = base64.b64encode(zlib.compress(raw, 6)).decode()
        if len(text) > config.max_state_bytes:
            raise state_too_large(self.shown_tool, len(text), config.max_state_bytes)
        return text

    @classmethod
    def load(cls, text: str) -> PausedExecution:
        """Read a state this gateway wrote (the boundary verified it), or ResumeRefused."""
        try:
            data = json.loads(zlib.decompress(base64.b64decode(text, validate=True)))
            if data["v"] != _VERSION:
                raise ValueError(f"state version {data['v']}")
            return cls(
                execution_id=str(data["id"]),
                began_at=float(data["began_at"]),
                round=int(data["round"]),
                code_sha256=str(data["code"]),
                component_sha256=str(data["component"]),
                nonce=str(data["nonce"]),
                seed=str(data["seed"]),
                answers=tuple(HostAnswer.from_wire(item) for item in data["answers"]),
                paused=PausedCall(*data["paused"]),
                shown_tool=str(data["shown"][0]),
                shown_digest=str(data["shown"][1]),
                quota={str(name): int(count) for name, count in data["quota"].items()},
                settled={int(call_id): str(item) for call_id, item in data["settled"]},
            )
        except (ValueError, KeyError, TypeError, binascii.Error, zlib.error) as exc:
            # Only a gateway of another version gets here: the boundary admits only states it sealed.
            raise ResumeRefused(
                f"the approval state cannot be read by this gateway ({type(exc).__name__}); "
                "run the snippet again"
            ) from None

    def check(self, code: str, component_sha256: str) -> None:
        """Refuse a state minted for another snippet or another build of the sandbox."""
        if self.code_sha256 != code_sha256(code):
            raise ResumeRefused("the approval state belongs to another snippet; run this one again")
        if self.component_sha256 != component_sha256:
            raise ResumeRefused(
                "the run paused on another build of the sandbox (the gateway was upgraded meanwhile), "
                "so it cannot be replayed here; run the snippet again"
            )


def paused_execution(
    execution_id: str,
    began_at: float,
    round_number: int,
    code: str,
    component_sha256: str,
    journal: HostJournal,
    shown_tool: str,
    shown_digest: str,
    quota: dict[str, int],
    config: ApprovalsConfig,
) -> PausedExecution:
    """The state of an execution that just paused at `journal.live_call`, or ApprovalLimitExceeded."""
    paused = journal.live_call
    if paused is None:  # a pause ends the guest inside the call it paused at: never expected
        raise GuestCrashed("the run paused outside a tool call, so it cannot be resumed; see the gateway log")
    if round_number > config.max_rounds:
        raise ApprovalLimitExceeded(
            f"{shown_tool} needs approval, and this execution has already paused for {round_number - 1} "
            f"approvals, the most one may (approvals.max_rounds); grant the tool in the team's policy, "
            "or split the work across executions"
        )
    if journal.overflowed:
        raise state_too_large(shown_tool, journal.recorded_bytes, config.max_state_bytes)
    return PausedExecution(
        execution_id=execution_id,
        began_at=began_at,
        round=round_number,
        code_sha256=code_sha256(code),
        component_sha256=component_sha256,
        nonce=secrets.token_urlsafe(16),
        seed=journal.seed,
        answers=tuple(journal.answers),
        paused=paused,
        shown_tool=shown_tool,
        shown_digest=shown_digest,
        quota=quota,
        settled=dict(journal.settled),
    )


def state_too_large(tool: str, size: int, cap: int) -> ApprovalLimitExceeded:
    return ApprovalLimitExceeded(
        f"{tool} needs approval, but what the run received before it (tool results, clock readings) "
        f"is too large to carry to the round that resumes it ({size:,} bytes, over "
        f"approvals.max_state_bytes of {cap:,}); make the call that needs approval before the large "
        "ones, ask the tools for less, or raise approvals.max_state_bytes"
    )


def as_refusal(exc: ResumeRefused | StateUnavailable) -> ResumeRefused:
    """A refused resume as the model reads it: a store that could not say refuses with its own message."""
    return exc if isinstance(exc, ResumeRefused) else ResumeRefused(str(exc))


class SpentStates:
    """The states resumed so far, each kept until it would have expired anyway: in this process, or
    with `state` set, in the store every replica checks."""

    def __init__(self, ttl_seconds: float, store: SpentApprovals | None = None) -> None:
        self._ttl = ttl_seconds
        self._store: SpentApprovals = store if store is not None else LocalSpentApprovals()

    async def spend(self, nonce: str) -> None:
        """Mark a state used, or ResumeRefused if it was used before (StateUnavailable if the shared
        store cannot say: the state is then not spent, and may be sent again)."""
        if not await self._store.spend(nonce, self._ttl):
            raise ResumeRefused(
                "this approval was already used: a paused run resumes once. Run the snippet again "
                "to be asked again"
            )
