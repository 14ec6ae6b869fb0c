"""Tool proxies: `call_tool("server.tool", **args)` and `tools.server.tool(**args)`."""

from typing import Any

from guest._blob import Blob, revive_blobs
from guest._hostcall import ToolError, host_call

__all__ = ["Blob", "ToolError", "call_tool", "tools"]


def call_tool(name: str, /, *positional: Any, **arguments: Any) -> Any:
    """Call a child tool by its namespaced name (`server.tool`) and return its result as a Python value."""
    if not isinstance(name, str) or not name or name.startswith("@"):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError(f"tool name must be 'server.tool', got {name!r}", tool=str(name))
    if positional:
        raise TypeError(
            f"tools take keyword arguments only: tools.{name}(name=value, ...); "
            "search_docs shows each tool's parameter names"
        )
    return revive_blobs(host_call(name, arguments))


class _ToolProxy:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *positional: Any, **arguments: Any) -> Any:
        return call_tool(self._name, *positional, **arguments)

    def __repr__(self) -> str:
        return f"<tool {self._name}>"


class _ServerProxy:
    __slots__ = ("_server",)

    def __init__(self, server: str) -> None:
        self._server = server

    def __getattr__(self, tool: str) -> _ToolProxy:
        if tool.startswith("__"):
            raise AttributeError(tool)
        return _ToolProxy(f"{self._server}.{tool}")

    def __repr__(self) -> str:
        return f"<server {self._server}: call search_docs to list its tools>"


class _Tools:
    """`tools.<server>.<tool>(**kwargs)`: names resolve on the host, which suggests close matches."""

    __slots__ = ()

    def __getattr__(self, server: str) -> _ServerProxy:
        if server.startswith("__"):
            raise AttributeError(server)
        return _ServerProxy(server)

    def __repr__(self) -> str:
        return "<tools: call search_docs to find them>"


tools = _Tools()
