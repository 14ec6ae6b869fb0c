"""Test doubles shipped with the library: in-process tools for a Sandbox, and a fake child for middleware.

tools = InProcessTools({"math.add": lambda a, b: a + b})
result = await sandbox.execute("tools.math.add(a=1, b=2)", tool_caller=tools)
assert tools.calls == [("math.add", {"a": 1, "b": 2})]

A team's middleware, unit-tested without a gateway or a child (the chain runs as the gateway runs
it: Refused becomes a ToolCallError, anything else it raises a MiddlewareFailed):

child = FakeChild({"ok": True})
value = await run_middleware(require_ticket, make_call("github.create_issue", {"ticket": "T-1"}), child)
assert child.calls[0].arguments["source"] == "gateway" and value == {"ok": True}
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.errors import ToolCallError
from gateway.middleware import Call, Chain, Layer, Middleware, Passage
from gateway.middleware.config import DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS

__all__ = ["FakeChild", "InProcessTools", "make_call", "run_middleware"]


class InProcessTools:
    """A ToolCaller over plain functions (sync or async); an unknown name is a ToolCallError."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self._functions = dict(functions)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        function = self._functions.get(name)
        if function is None:
            raise ToolCallError(f"unknown tool {name!r}; known: {', '.join(sorted(self._functions))}")
        try:
            inspect.signature(function).bind(**arguments)
        except TypeError as exc:  # as a real child would: the caller's mistake, not a crash
            raise ToolCallError(f"bad arguments for {name}: {exc}") from None
        result = function(**arguments)
        return await result if inspect.isawaitable(result) else result


def make_call(
    tool: str = "server.tool",
    arguments: Mapping[str, Any] | None = None,
    *,
    principal: str | None = None,
    roles: Sequence[str] = (),
    execution_id: str = "test-execution",
    issuer: str | None = None,
) -> Call:
    """A Call as a middleware would get it for `tool` ("server.tool"), its server named by the prefix."""
    server = tool.partition(".")[0]
    return Call(tool, server, dict(arguments or {}), principal, tuple(roles), execution_id, issuer)


class FakeChild:
    """The end of the chain in a test: records every Call it gets and answers with `result`, or with
    `answer(call)` if given (which may raise, as a child's error would: a ToolCallError)."""

    def __init__(self, result: Any = None, answer: Callable[[Call], Any] | None = None) -> None:
        self._result = result
        self._answer = answer
        self.calls: list[Call] = []

    async def __call__(self, call: Call) -> Any:
        self.calls.append(call)
        if self._answer is None:
            return self._result
        answered = self._answer(call)
        return await answered if inspect.isawaitable(answered) else answered


async def run_middleware(
    middleware: Middleware | Sequence[Middleware],
    call: Call,
    child: FakeChild | None = None,
    *,
    timeout: float = DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS,
) -> Any:
    """Run `middleware` (one, or several with the first outermost) around `child` as the gateway does:
    the value the snippet would receive, or the error it would get. The gateway's own checks of
    changed arguments (inputSchema, policy) need a real gateway; everything else is the same."""
    chain = Chain(tuple(Layer(_name(each), each) for each in _listed(middleware)), timeout)
    fake = child if child is not None else FakeChild()

    async def innermost(final: Call, _passage: Passage) -> Any:
        return await fake(final)

    return await chain.run(call, innermost)


def _listed(middleware: Middleware | Sequence[Middleware]) -> list[Middleware]:
    if isinstance(middleware, Sequence):
        return list(middleware)
    return [middleware]


def _name(middleware: Middleware) -> str:
    """A name for errors, as an import path would read."""
    module = getattr(middleware, "__module__", None) or "?"
    name = getattr(middleware, "__qualname__", None) or type(middleware).__qualname__
    return f"{module}:{name}"
