"""A run's host answers, in order: what lets a run that paused for approval resume in any process.

The guest has no clock, entropy or I/O of its own. The seed it is given and the answers of its one
import (clock readings, sleeps, tool results, refusals) decide everything it does, so the same
snippet, given the same seed and the same answers, reaches the same point. A resumed run is
answered from the journal up to where the paused run stopped, without touching any child; the
first call after that must be the call that was paused, and from there the run is live. Any other
call means the run is not the one the user approved, and it ends (fails closed).

Calls the run had started side by side and not yet received when it paused were let finish; their
answers are kept apart (`settled`), and the resumed run receives them when it waits for them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.errors import ResumeRefused
from gateway.sandbox.result import ToolCallRecord

__all__ = ["HostAnswer", "HostJournal", "PausedCall", "arguments_digest"]


def arguments_digest(args_json: str) -> str:
    """A short collision-resistant name for one call's JSON arguments (128 bits)."""
    return base64.urlsafe_b64encode(hashlib.sha256(args_json.encode()).digest()[:16]).decode().rstrip("=")


@dataclass(frozen=True)
class HostAnswer:
    """One answer of `host.call`: `ok` and its payload (the result JSON, or the error JSON)."""

    name: str
    digest: str
    ok: bool
    payload: str
    record: ToolCallRecord | None = None  # for tool calls: what the run's result lists

    def to_wire(self) -> list[Any]:
        record = None if self.record is None else self.record.model_dump(exclude_none=True)
        return [self.name, self.digest, self.ok, self.payload, record]

    @classmethod
    def from_wire(cls, item: list[Any]) -> HostAnswer:
        name, digest, ok, payload, record = item
        return cls(
            name, digest, ok, payload, None if record is None else ToolCallRecord.model_validate(record)
        )


@dataclass(frozen=True)
class PausedCall:
    """The call a run paused at: the first call a resumed run makes after its journal."""

    name: str
    digest: str


class HostJournal:
    """Records a live run's host answers; replays them, in order and verified, for a resumed one."""

    def __init__(
        self,
        seed: str | None = None,
        answers: Sequence[HostAnswer] = (),
        paused: PausedCall | None = None,
        *,
        settled: Mapping[int, str] | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.seed = seed or secrets.token_hex(32)
        self.answers: list[HostAnswer] = list(answers)
        self.settled: dict[int, str] = dict(settled or {})  # call id -> its answer, not yet received
        self.recorded_bytes = sum(_cost(answer.name, answer.payload) for answer in self.answers)
        self.recorded_bytes += sum(_cost("", item) for item in self.settled.values())
        self.overflowed = False  # past `max_bytes`: recording stopped, this run cannot pause
        self._max_bytes = max_bytes
        self._replay_end = len(self.answers)
        self._position = 0
        self._paused = paused
        self.live_call: PausedCall | None = None  # the live call being answered (where a run paused)
        self._monotonic_floor = 0  # the latest monotonic reading replayed
        self._monotonic_offset: int | None = None  # fixed at the first live reading

    @property
    def replaying(self) -> bool:
        return self._position < self._replay_end

    def replay(self, name: str, args_json: str) -> HostAnswer | None:
        """The journal's answer to this call while replaying; None once the run is live."""
        digest = arguments_digest(args_json)
        if not self.replaying:
            self._check_paused_call(name, digest)
            self.live_call = PausedCall(name, digest)
            return None
        answer = self.answers[self._position]
        if answer.name != name or answer.digest != digest:
            raise _diverged(f"call {self._position + 1} was {_shown(answer.name)}, now {_shown(name)}")
        self._position += 1
        if name == "@clock" and answer.ok:
            self._monotonic_floor = int(json.loads(answer.payload)["monotonic_ns"])
        return answer

    def _check_paused_call(self, name: str, digest: str) -> None:
        paused, self._paused = self._paused, None
        if paused is not None and (paused.name != name or paused.digest != digest):
            raise _diverged(f"it paused at {_shown(paused.name)}, and resumed at {_shown(name)}")

    def record(self, ok: bool, payload: str, record: ToolCallRecord | None) -> None:
        """Keep the answer to the live call, unless the journal is past its cap (then the run cannot
        pause: the cap bounds what a run holds, as well as what a paused one carries)."""
        call, self.live_call = self.live_call, None
        if call is None or self.overflowed:
            return
        self.recorded_bytes += _cost(call.name, payload)
        if self._max_bytes is not None and self.recorded_bytes > self._max_bytes:
            self.overflowed = True
            self.answers.clear()  # never used again: free it now
            return
        self.answers.append(HostAnswer(call.name, call.digest, ok, payload, record))

    def settle(self, call_id: int, item: str) -> None:
        """Keep the answer of a call that finished while the run paused, for the run that resumes it."""
        self.recorded_bytes += _cost("", item)
        if self._max_bytes is not None and self.recorded_bytes > self._max_bytes:
            self.overflowed = True
        self.settled[call_id] = item

    def take_settled(self, ids: Sequence[int]) -> dict[int, str]:
        """The kept answers among `ids`, once the replay is over (while replaying, waits are replayed)."""
        if self.replaying:
            return {}
        return {call_id: self.settled.pop(call_id) for call_id in ids if call_id in self.settled}

    def clock(self) -> dict[str, int]:
        """A live clock reading; after a replay, monotonic time continues from the last replayed
        reading (another process's monotonic clock has another origin, and the pause is not the
        snippet's time)."""
        now = time.monotonic_ns()
        if self._monotonic_offset is None:
            self._monotonic_offset = self._monotonic_floor - now if self._monotonic_floor else 0
        return {"time_ns": time.time_ns(), "monotonic_ns": now + self._monotonic_offset}


def _cost(name: str, payload: str) -> int:
    """What one answer adds to the journal, roughly as its state will carry it."""
    return len(payload) + len(name) + 64


def _shown(name: str) -> str:
    return repr(name[:80])


def _diverged(detail: str) -> ResumeRefused:
    return ResumeRefused(
        f"the resumed run did not repeat the paused one ({detail}), so it was stopped before any "
        "call reached a server; run the snippet again"
    )
