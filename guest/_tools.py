"""Tool proxies: `call_tool("server.tool", **args)` and `tools.server.tool(**args)`; discovery with
`search("...")`, `help(tools.server.tool)`, `dir(tools)` and `dir(tools.server)`."""

import ast
from typing import Any

from guest._aio import tool_call
from guest._blob import Blob, revive_blobs
from guest._hostcall import ToolError, host_call
from guest._precheck import literal_calls, may_name_tools, positional_arguments_message

__all__ = [
    "Blob",
    "ToolError",
    "ToolInfo",
    "call_tool",
    "check_calls",
    "defer",
    "help",
    "resources",
    "search",
    "show",
    "tools",
]


def _check_call(name: str, positional: tuple[Any, ...]) -> None:
    if not isinstance(name, str) or not name or name.startswith("@"):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError(f"tool name must be 'server.tool', got {name!r}", tool=str(name))
    if positional:
        raise TypeError(positional_arguments_message(name))


def call_tool(name: str, /, *positional: Any, **arguments: Any) -> Any:
    """Call a child tool by its namespaced name (`server.tool`) and return its result as a Python value."""
    _check_call(name, positional)
    return revive_blobs(host_call(name, arguments))


def _start_tool(name: str, /, *positional: Any, **arguments: Any) -> Any:
    """`call_tool` as a coroutine, for a call that is awaited or handed to asyncio."""
    _check_call(name, positional)
    return tool_call(name, arguments)


def show(*items: Blob) -> None:
    """Send images, audio or files to the client as MCP content, for the model to see."""
    for item in items:
        if not isinstance(item, Blob):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"show() takes Blob objects, got {type(item).__name__}: print() text, or make one "
                "with Blob(data, mime_type='image/png')"
            )
        host_call("@show", item.shown())


def check_calls(code: str, tree: ast.Module) -> None:
    """Refuse the snippet before it runs if a tool call written out in it would fail its checks."""
    if not may_name_tools(code):
        return  # walking the tree would find nothing: spare the snippet its cost
    calls = literal_calls(tree)
    if not calls:
        return
    findings = host_call("@precheck", {"calls": calls})["findings"]
    if findings:
        lines = "".join(f"\n  line {finding['line']}: {finding['message']}" for finding in findings)
        raise ToolError(
            "the snippet was not run: its tool calls were checked against the catalog first, and "
            f"{'this one' if len(findings) == 1 else 'these'} would fail:{lines}"
        )


def defer(function: Any) -> Any:
    """What a call of `function` that is awaited or handed to asyncio calls: a tool's coroutine form."""
    if isinstance(function, _ToolProxy):
        return function._start  # pyright: ignore[reportPrivateUsage]
    if function is call_tool:
        return _start_tool
    return function


def _docs(**question: str) -> dict[str, Any]:
    return host_call("@docs", question)


class ToolInfo:
    """One tool as `search()` finds it: its name, its signature (what it shows as), its description."""

    __slots__ = ("access", "description", "name", "signature")

    def __init__(self, name: str, signature: str, description: str, access: str | None) -> None:
        self.name = name
        self.signature = signature
        self.description = description
        self.access = access

    def __repr__(self) -> str:
        return self.signature

    __str__ = __repr__


def search(query: str = "", server: str | None = None, limit: int = 5) -> list[ToolInfo]:
    """The tools that best match `query`, best first, as search_docs ranks them."""
    found = host_call("@search", {"query": query, "server": server, "limit": limit})
    return [ToolInfo(t["name"], t["signature"], t["description"], t["access"]) for t in found]


class _ToolProxy:
    __slots__ = ("_name", "_server", "_tool")

    def __init__(self, server: str, tool: str) -> None:
        self._server = server
        self._tool = tool
        self._name = f"{server}.{tool}"

    def __call__(self, *positional: Any, **arguments: Any) -> Any:
        return call_tool(self._name, *positional, **arguments)

    def _start(self, *positional: Any, **arguments: Any) -> Any:
        """The call as a coroutine, to await or to run beside others with asyncio."""
        return _start_tool(self._name, *positional, **arguments)

    @property
    def __doc__(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        """The tool's signature, description and schemas, from the catalog."""
        return _docs(server=self._server, tool=self._tool)["doc"]

    def __repr__(self) -> str:
        return f"<tool {self._name}: help(tools.{self._name}) shows its signature>"


class _ServerProxy:
    __slots__ = ("_server",)

    def __init__(self, server: str) -> None:
        self._server = server

    def __getattr__(self, tool: str) -> _ToolProxy:
        if tool.startswith("__"):
            raise AttributeError(tool)
        return _ToolProxy(self._server, tool)

    def __dir__(self) -> list[str]:
        return _docs(server=self._server)["names"]

    @property
    def __doc__(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        """The server's state and its tools' signatures."""
        return _docs(server=self._server)["doc"]

    def __repr__(self) -> str:
        return f"<server {self._server}: dir() lists its tools, help() shows their signatures>"


class _Tools:
    """`tools.<server>.<tool>(**kwargs)`: names resolve on the host, which suggests close matches."""

    __slots__ = ()

    def __getattr__(self, server: str) -> _ServerProxy:
        if server.startswith("__"):
            raise AttributeError(server)
        return _ServerProxy(server)

    def __dir__(self) -> list[str]:
        return _docs()["names"]

    @property
    def __doc__(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        """Every server with its state and tool names."""
        return _docs()["doc"]

    def __repr__(self) -> str:
        return "<tools: dir(tools) lists the servers, search('what you need') finds tools>"


class _ResourceServer:
    """`resources.<server>`: its resources listed, and one read by its uri."""

    __slots__ = ("_server",)

    def __init__(self, server: str) -> None:
        self._server = server

    def list(self) -> dict[str, Any]:
        """{"resources": [{"uri", "name", "description", "mime_type", ...}], "templates": [...]}."""
        return host_call("@resources", {"server": self._server, "op": "list"})

    def read(self, uri: str) -> Any:
        """The resource's content: text as `str`, binary as `Blob` (a list if it has several parts)."""
        if not isinstance(uri, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"resources.{self._server}.read() takes the uri as text, as list() shows it")
        contents = host_call("@resources", {"server": self._server, "op": "read", "uri": uri})["contents"]
        parts = [part["text"] if "text" in part else revive_blobs(part) for part in contents]
        return parts[0] if len(parts) == 1 else parts

    def __repr__(self) -> str:
        return f"<resources of {self._server}: .list() and .read(uri)>"


class _Resources:
    """`resources.<server>.list()` and `resources.<server>.read(uri)`: the children's resources."""

    __slots__ = ()

    def __getattr__(self, server: str) -> _ResourceServer:
        if server.startswith("__"):
            raise AttributeError(server)
        return _ResourceServer(server)

    def __repr__(self) -> str:
        return "<resources: resources.<server>.list(), resources.<server>.read(uri)>"


resources = _Resources()


def help(thing: Any = None) -> None:  # the snippet's `help`: pydoc is not in the sandbox
    """Print what `thing` is: a tool's signature and schema, a server's tools, or a docstring."""
    if thing is None:
        print(
            "search('what you need') finds tools; help(tools.<server>.<tool>) shows one; "
            "dir(tools) lists the servers."
        )
        return
    if isinstance(thing, _Tools | _ServerProxy | _ToolProxy):
        print(thing.__doc__)
        return
    name = getattr(thing, "__qualname__", None) or type(thing).__qualname__
    doc = (
        getattr(thing, "__doc__", None) if callable(thing) or isinstance(thing, type) else type(thing).__doc__
    )
    print(f"{name}\n\n{doc}" if doc else f"{name}: no documentation")


tools = _Tools()
