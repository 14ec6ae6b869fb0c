"""A test double shipped with the library: in-process tools for a Sandbox, recording every call.

tools = InProcessTools({"math.add": lambda a, b: a + b})
result = await sandbox.execute("tools.math.add(a=1, b=2)", tool_caller=tools)
assert tools.calls == [("math.add", {"a": 1, "b": 2})]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from gateway.errors import ToolCallError

__all__ = ["InProcessTools"]


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
