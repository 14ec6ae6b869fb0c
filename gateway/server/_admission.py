"""Calls admitted over HTTP: in flight and queued, per caller and in total.

An execution (`execute_code`, an exposed tool's call) takes an in-flight place before it reaches the
gateway; with none free it waits in a first-come queue, and past the queue it is refused at once:
429 when its caller's own caps are full, 503 when the gateway's are. A place is held until the HTTP
exchange has ended and the handler serving the call has returned (on the handshake era a call keeps
running when its response stream closes), so disconnecting never frees a place early.

A caller is an `Owner` (`_gate.caller_of`): a principal of one issuer when clients are
authenticated, else a session or an address.

With `state` set, a call admitted here also takes a place in its caller's count across replicas
(`CallerCaps`, a lease renewed while it runs); when the caller's places are all taken on the
replicas together, the call is refused with 429 rather than queued, since the place that frees may
be on another replica. A store that cannot say leaves each replica's own cap in force.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from dataclasses import dataclass

import anyio

from gateway.auth import Owner
from gateway.config.server import HttpConfig
from gateway.errors import StateUnavailable
from gateway.server._refusals import RETRY_AFTER_SECONDS, Refusal
from gateway.state import CallerCaps

__all__ = ["Admission", "ExecutionCaps", "RequestCounts", "Ticket"]

# A place freed on a replica reaches the store just after that call's answer: a caller at its cap
# that calls again at once is asked again briefly before it is refused.
_SHARED_RETRIES = (0.0, 0.05, 0.1, 0.2)


@dataclass(frozen=True, slots=True)
class ExecutionCaps:
    """The four caps, with the config keys that set them."""

    in_flight: int
    queued: int
    in_flight_per_caller: int
    queued_per_caller: int

    @classmethod
    def of(cls, http: HttpConfig) -> ExecutionCaps:
        return cls(
            http.max_executions_in_flight,
            http.max_executions_queued,
            http.max_executions_in_flight_per_caller,
            http.max_executions_queued_per_caller,
        )


class Ticket:
    """An admitted call's in-flight place: freed when every holder has let go."""

    def __init__(self, admission: Admission, caller: Owner) -> None:
        self._admission = admission
        self.caller = caller
        self._holders = 1
        self.lease: str | None = None  # its place in the caller's count across replicas, if taken

    def hold(self) -> None:
        """One more holder (the handler serving the call). A place already freed is taken again,
        past the caps if need be: the call runs whatever the count says, so the count says so too."""
        if self._holders == 0:
            self._admission.occupy(self.caller)
        self._holders += 1

    def release(self) -> None:
        """One holder lets go; the last one frees the place for the next call in the queue."""
        if self._holders == 0:
            return
        self._holders -= 1
        if self._holders == 0:
            self._admission.vacate(self.caller)
            if self.lease is not None:
                self._admission.leave_shared(self.caller, self.lease)
                self.lease = None


class _Waiter:
    __slots__ = ("admitted", "caller", "outcome")

    def __init__(self, caller: Owner) -> None:
        self.caller = caller
        self.admitted = anyio.Event()
        self.outcome: Ticket | Refusal | None = None


class Admission:
    """In-flight places and the queue in front of them, per caller and in total."""

    def __init__(self, caps: ExecutionCaps, shared: CallerCaps | None = None) -> None:
        """`shared`: the per-caller counts replicas share (with `state`), None for this replica's alone."""
        self.caps = caps
        self._shared = shared
        self._running: Counter[Owner] = Counter()
        self._waiting: Counter[Owner] = Counter()
        self._queue: deque[_Waiter] = deque()
        self._in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._closed = False

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def admit(self, caller: Owner) -> Ticket | Refusal:
        """An in-flight place for `caller`'s call, at once, after waiting its turn, or a refusal.

        Cancelled while waiting (the client went away), the call leaves the queue.
        """
        if self._closed:
            return _shutting_down()
        if self._has_room(caller):
            self.occupy(caller)
            return await self._take_shared(Ticket(self, caller))
        refusal = self._queue_full(caller)
        if refusal is not None:
            return refusal
        waiter = _Waiter(caller)
        self._queue.append(waiter)
        self._waiting[caller] += 1
        try:
            await waiter.admitted.wait()
        except BaseException:  # cancelled while waiting
            if isinstance(waiter.outcome, Ticket):
                waiter.outcome.release()  # admitted at the very moment it was cancelled
            elif waiter.outcome is None:
                self._leave_queue(waiter)
            raise
        outcome = waiter.outcome or _shutting_down()  # set before `admitted` is
        return await self._take_shared(outcome) if isinstance(outcome, Ticket) else outcome

    async def _take_shared(self, ticket: Ticket) -> Ticket | Refusal:
        """`ticket` once its caller's count across replicas has room too, else a 429 (and the place freed)."""
        if self._shared is None:
            return ticket
        cap = self.caps.in_flight_per_caller
        try:
            for wait in _SHARED_RETRIES:
                await anyio.sleep(wait)
                ticket.lease = await self._shared.enter(_shared_key(ticket.caller), cap)
                if ticket.lease is not None:
                    return ticket
        except StateUnavailable:
            return ticket  # the store cannot say: this replica's own cap holds meanwhile
        except BaseException:
            ticket.release()
            raise
        ticket.release()
        return Refusal(
            429,
            f"too many calls from this caller across the replicas: {cap} in flight "
            f"(http.max_executions_in_flight_per_caller = {cap}, counted together through `state`); retry "
            "when one of them has finished",
            "http.max_executions_in_flight_per_caller",
            cap,
            RETRY_AFTER_SECONDS,
        )

    def leave_shared(self, caller: Owner, lease: str) -> None:
        """Free `caller`'s place across replicas taken as `lease`."""
        if self._shared is not None:
            self._shared.leave(_shared_key(caller), lease)

    def stop_admitting(self) -> None:
        """For shutdown: refuse every waiting call and every new one; those in flight go on."""
        self._closed = True
        while self._queue:
            waiter = self._queue.popleft()
            waiter.outcome = _shutting_down()
            waiter.admitted.set()
        self._waiting.clear()

    async def wait_idle(self) -> None:
        """Return once no call is in flight."""
        while self._in_flight:
            await self._idle.wait()

    def occupy(self, caller: Owner) -> None:
        if self._in_flight == 0:
            self._idle = anyio.Event()
        self._running[caller] += 1
        self._in_flight += 1

    def vacate(self, caller: Owner) -> None:
        self._running[caller] -= 1
        if self._running[caller] <= 0:
            del self._running[caller]
        self._in_flight -= 1
        self._admit_waiting()
        if self._in_flight == 0:
            self._idle.set()

    def _has_room(self, caller: Owner) -> bool:
        return (
            self._in_flight < self.caps.in_flight and self._running[caller] < self.caps.in_flight_per_caller
        )

    def _admit_waiting(self) -> None:
        """Hand free places to waiting calls, oldest first, skipping those whose caller is full."""
        for waiter in list(self._queue):
            if self._in_flight >= self.caps.in_flight:
                return
            if self._running[waiter.caller] < self.caps.in_flight_per_caller:
                self._leave_queue(waiter)
                self.occupy(waiter.caller)
                waiter.outcome = Ticket(self, waiter.caller)
                waiter.admitted.set()

    def _leave_queue(self, waiter: _Waiter) -> None:
        if waiter in self._queue:
            self._queue.remove(waiter)
            self._waiting[waiter.caller] -= 1
            if self._waiting[waiter.caller] <= 0:
                del self._waiting[waiter.caller]

    def _queue_full(self, caller: Owner) -> Refusal | None:
        caps = self.caps
        running, waiting = self._running[caller], self._waiting[caller]
        caller_full = running >= caps.in_flight_per_caller
        if waiting >= caps.queued_per_caller and (caller_full or caps.queued_per_caller):
            key, value = (
                ("http.max_executions_queued_per_caller", caps.queued_per_caller)
                if caps.queued_per_caller
                else ("http.max_executions_in_flight_per_caller", caps.in_flight_per_caller)
            )
            return Refusal(
                429,
                f"too many calls from this caller: {running} in flight and {waiting} queued "
                f"(http.max_executions_in_flight_per_caller = {caps.in_flight_per_caller}, "
                f"http.max_executions_queued_per_caller = {caps.queued_per_caller}); retry when one "
                "of them has finished",
                key,
                value,
                RETRY_AFTER_SECONDS,
            )
        if len(self._queue) >= caps.queued or waiting >= caps.queued_per_caller:
            key, value = (
                ("http.max_executions_queued", caps.queued)
                if caps.queued
                else ("http.max_executions_in_flight", caps.in_flight)
            )
            return Refusal(
                503,
                f"the gateway is busy: {self._in_flight} calls in flight and {len(self._queue)} queued "
                f"(http.max_executions_in_flight = {caps.in_flight}, http.max_executions_queued = "
                f"{caps.queued}); retry shortly",
                key,
                value,
                RETRY_AFTER_SECONDS,
            )
        return None


class RequestCounts:
    """MCP requests open per caller (every kind, from its head to its answer's end), under a cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: Counter[Owner] = Counter()

    def enter(self, caller: Owner) -> Refusal | None:
        """Count a request of `caller`'s, or a refusal when `caller` is at the cap."""
        open_now = self._open[caller]
        if open_now >= self.cap:
            return Refusal(
                429,
                f"too many requests open from this caller: {open_now} "
                f"(http.max_requests_in_flight_per_caller = {self.cap}); retry when one has been answered",
                "http.max_requests_in_flight_per_caller",
                self.cap,
                RETRY_AFTER_SECONDS,
            )
        self._open[caller] += 1
        return None

    def leave(self, caller: Owner) -> None:
        """A counted request of `caller`'s has ended."""
        self._open[caller] -= 1
        if self._open[caller] <= 0:
            del self._open[caller]


def _shared_key(caller: Owner) -> str:
    return json.dumps([caller.issuer, caller.principal])


def _shutting_down() -> Refusal:
    return Refusal(
        503,
        "the gateway is shutting down: retry shortly (another instance may answer)",
        retry_after=RETRY_AFTER_SECONDS,
    )
