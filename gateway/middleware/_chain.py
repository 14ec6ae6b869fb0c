"""The onion: each middleware around the rest of the chain, first listed outermost, the child inside.

A middleware is the team's code, run in the gateway's process (never in the sandbox); what it may
do to a call is bounded here. It may change the arguments (the gateway checks them again before
the child gets them), refuse (`Refused`), or return another value. Anything else it raises, a
value that is not JSON, a second `call_next`, a change to what the call is (its tool, its caller),
or more than `timeout` seconds of its own (time inside `call_next` is not its own) fails the call
closed with MiddlewareFailed naming it; the log gets the traceback.
"""

from __future__ import annotations

import copy
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio

from gateway.errors import ConfigError, MiddlewareFailed, ToolCallError
from gateway.middleware._call import Call, Middleware, Refused, Search, SearchEntry, SearchHook
from gateway.middleware.config import DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS, import_middleware

__all__ = ["Chain", "Innermost", "Layer", "Passage"]

log = logging.getLogger("gateway.middleware")

Innermost = Callable[[Call, "Passage"], Awaitable[Any]]
"""What the chain wraps: the child's call for the final Call (its arguments checked again if changed)."""

_FIXED = ("tool", "server", "principal", "issuer", "roles", "execution_id")


@dataclass(frozen=True)
class Layer:
    """One middleware: its import path (the name logs, errors and the audit give it), and its hooks."""

    name: str
    handle: Middleware
    on_search: SearchHook | None = None

    @classmethod
    def imported(cls, path: str) -> Layer:
        """The middleware at `path` (`module:callable`); ValueError if it cannot be used."""
        target = import_middleware(path)
        return cls(path, cast("Middleware", target), getattr(target, "on_search", None))


@dataclass
class Passage:
    """What happened to one call on its way through: who changed its arguments, who stopped it."""

    changed_by: str | None = None  # the last middleware whose call_next got other arguments
    blamed: str | None = None  # the middleware that refused or failed the call


@dataclass(frozen=True)
class Chain:
    """The config's middleware in order, each bounded to `timeout` seconds of its own per call."""

    layers: tuple[Layer, ...] = ()
    timeout: float = DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS

    @classmethod
    def load(cls, paths: Sequence[str], timeout: float = DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS) -> Chain:
        """The chain of the middleware at `paths`, first outermost; ConfigError naming a bad one."""
        try:
            return cls(tuple(Layer.imported(path) for path in paths), timeout)
        except ValueError as exc:
            raise ConfigError(f"middleware: {exc}") from None

    def __bool__(self) -> bool:
        return bool(self.layers)

    @property
    def searches(self) -> bool:
        """Whether a middleware has an on_search hook (else search_docs need not ask)."""
        return any(layer.on_search is not None for layer in self.layers)

    async def run(self, call: Call, innermost: Innermost, passage: Passage | None = None) -> Any:
        """`call` through every middleware to `innermost`; the value the outermost returns."""
        passage = passage or Passage()
        return await self._through(0, call, innermost, passage)

    async def _through(self, index: int, call: Call, innermost: Innermost, passage: Passage) -> Any:
        if index == len(self.layers):
            return await innermost(call, passage)
        layer = self.layers[index]
        pristine = call.arguments  # only the chain holds it: the middleware gets a copy
        passed: list[BaseException] = []  # what call_next raised passes through untouched
        answers: list[Any] = []
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.timeout)

        def failed(why: str, exc: Exception | None = None) -> MiddlewareFailed:
            """The call fails closed; the log says why (with the traceback of its own error)."""
            passage.blamed = layer.name
            log.error(
                "a middleware failed; the call failed closed",
                exc_info=exc,
                extra={
                    "middleware": layer.name,
                    "why": why,
                    "tool": call.tool,
                    "execution_id": call.execution_id,
                },
            )
            return MiddlewareFailed(
                f"middleware {layer.name} {why}; the call failed closed", middleware=layer.name
            )

        async def call_next(next_call: Call) -> Any:
            try:
                if answers or passed:
                    raise failed("called call_next twice: one call reaches the child once")
                if not isinstance(next_call, Call):  # pyright: ignore[reportUnnecessaryIsInstance]  # team code
                    raise failed(f"passed call_next a {type(next_call).__name__}, not a Call")
                changed = [name for name in _FIXED if getattr(next_call, name) != getattr(call, name)]
                if changed:
                    raise failed(
                        f"changed the call's {', '.join(changed)}: a middleware may change only its arguments"
                    )
                if not isinstance(next_call.arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise failed(
                        f"passed arguments that are a {type(next_call.arguments).__name__}, not a dict"
                    )
                if next_call.arguments != pristine:
                    passage.changed_by = layer.name
            except MiddlewareFailed as exc:
                passed.append(exc)
                raise
            own_left = scope.deadline - anyio.current_time()
            scope.deadline = math.inf  # the rest of the chain and the child are bounded on their own
            try:
                answer = await self._through(index + 1, next_call, innermost, passage)
            except BaseException as exc:
                passed.append(exc)
                raise
            finally:
                scope.deadline = anyio.current_time() + own_left
            answers.append(answer)
            return answer

        given = call.replace(arguments=copy.deepcopy(pristine))
        value: Any = None
        with scope:
            try:
                value = await _awaited(layer.handle(given, call_next))
            except Refused as refusal:
                passage.blamed = layer.name
                raise ToolCallError(str(refusal) or f"refused by middleware {layer.name}") from None
            except Exception as exc:
                if any(exc is seen for seen in passed):
                    raise
                if scope.cancel_called:  # it turned its own timeout into another error
                    raise failed(self._late, exc) from None
                # Only the type: the message may hold what the snippet must not read; the log has it.
                raise failed(f"failed ({type(exc).__name__})", exc) from None
        if scope.cancel_called:  # its own time ran out (even if it swallowed the cancellation)
            raise failed(self._late)
        if not (answers and value is answers[0]):
            problem = _not_json(value)
            if problem is not None:
                raise failed(f"returned a value that is not JSON ({problem})")
        return value

    @property
    def _late(self) -> str:
        return f"did not finish within {self.timeout:g} s (middleware_timeout_seconds)"

    async def on_search(self, entries: list[SearchEntry], search: Search) -> list[SearchEntry]:
        """The entries each middleware's on_search keeps, in order; one that fails or takes longer than
        `timeout` hides everything (a filter that failed must not show what it would have hidden)."""
        for layer in self.layers:
            if layer.on_search is None:
                continue
            try:
                with anyio.fail_after(self.timeout):
                    kept = await layer.on_search(list(entries), search)
                entries = _checked_entries(kept, entries)
            except Exception as exc:
                log.error(
                    "a middleware's on_search failed; search_docs shows no tools",
                    exc_info=exc,
                    extra={"middleware": layer.name},
                )
                return []
        return entries


async def _awaited(pending: object) -> Any:
    """What a middleware's call gives, awaited; a TypeError if it is not async after all."""
    if not inspect.isawaitable(pending):
        raise TypeError(f"it returned a {type(pending).__name__}, not an awaitable: it is not async")
    return await pending


def _checked_entries(kept: object, given: list[SearchEntry]) -> list[SearchEntry]:
    """What on_search returned, if it kept only entries it was given (a description may change)."""
    if not isinstance(kept, list):
        raise TypeError(f"on_search returned a {type(kept).__name__}, not a list")
    known = {(entry.tool, entry.server) for entry in given}
    checked: list[SearchEntry] = []
    for entry in cast("list[object]", kept):
        if not isinstance(entry, SearchEntry) or (entry.tool, entry.server) not in known:
            raise TypeError("on_search may return only the entries it was given (a tool cannot be added)")
        if not isinstance(entry.description, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("an entry's description must be text")
        checked.append(entry)
    return checked


def _not_json(value: object) -> str | None:
    """Why `value` is not a JSON value (dicts with text keys, lists, text, finite numbers, bools,
    None), or None when it is; walked without recursion, so depth costs nothing."""
    todo = [value]
    while todo:
        item = todo.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{item!r} is not a JSON number"
            continue
        if isinstance(item, dict):
            mapping = cast("dict[object, object]", item)
            if not all(isinstance(key, str) for key in mapping):
                return "a dict key is not text"
            todo.extend(mapping.values())
        elif isinstance(item, list | tuple):
            todo.extend(cast("list[object]", item))
        else:
            return f"holds a {type(item).__name__}"
    return None
