"""A snippet's literal tool calls, found before it runs, for the host to check against the catalog.

Only calls written out in full are reported: `tools.<server>.<tool>(...)` and
`call_tool("<server>.<tool>", ...)`, wherever they appear (under `await`, in functions,
comprehensions, arguments of other calls). A name built at run time or a proxy kept in a variable is
left to the checks each call makes as it runs, and so is every call of a snippet that rebinds
`tools` or `call_tool` anywhere: those names may then mean something else.

Pure Python and stdlib only: it runs in the sandbox on the untrusted snippet (bounded by fuel), and
on the host in tests. The host imports the limits and `positional_arguments_message` from here.
"""

import ast
import math
from typing import Any

__all__ = [
    "MAX_CALLS",
    "MAX_KEYWORDS",
    "MAX_NAME_CHARS",
    "is_tool_name",
    "literal_calls",
    "may_name_tools",
    "positional_arguments_message",
]

MAX_CALLS = 200
"""Calls reported per snippet, at most; later ones are left to run time."""
MAX_KEYWORDS = 100
"""Keywords of one call, at most; a call with more is not reported."""
MAX_NAME_CHARS = 256
"""A tool or keyword name, at most, as the host takes a tool name at run time."""
MAX_LITERAL_COST = 4_096
"""One literal value's nodes plus characters, at most; a larger value is not reported (taken as valid)."""
MAX_REPORT_COST = 65_536
"""All names and literal values of the report together, at most; calls past it are not reported."""
_MAX_LITERAL_DEPTH = 32
_MAX_INT_BITS = 1_024

_GATEWAY_NAMES = frozenset({"tools", "call_tool"})
# Builtins that read or write the snippet's namespace by string (`globals()["tools"] = ...`).
_NAMESPACE_BUILTINS = frozenset({"globals", "locals", "vars", "exec", "eval"})
_NOT_LITERAL: Any = object()


def positional_arguments_message(name: str) -> str:
    """The refusal of a tool call given positional arguments, at run time and before it."""
    return (
        f"tools take keyword arguments only: tools.{name}(name=value, ...); "
        "search_docs shows each tool's parameter names"
    )


def is_tool_name(name: str) -> bool:
    """Whether `call_tool` sends `name` to the host at all (it refuses an empty or `@` name itself)."""
    return bool(name) and not name.startswith("@")


def may_name_tools(source: str) -> bool:
    """False only if `literal_calls` would find nothing in `source`: each literal call names `tools`
    or `call_tool`, which an ASCII source must spell out (Python folds some non-ASCII letters into
    ASCII ones in identifiers, so any other source may)."""
    return not source.isascii() or "tool" in source


def literal_calls(tree: ast.Module) -> list[dict[str, Any]]:
    """JSON-able records of the snippet's literal tool calls, by line; none if it rebinds the names.

    Each record: {"line": int, "tool": "server.tool", "positional": int, "star_args": bool,
    "keywords": [name, ...], "star_kwargs": bool, "literals": {name: JSON value}}. `positional`
    counts the positional arguments written out (the name of `call_tool` aside), `star_args` and
    `star_kwargs` say whether a `*` or `**` splat adds more, and `literals` holds the keywords whose
    value is written as a small JSON-able literal (tuples as lists).
    """
    found: list[tuple[int, int, dict[str, Any]]] = []
    budget = [MAX_REPORT_COST]
    for node in ast.walk(tree):  # one walk: a rebinding may come after the calls it affects
        if _rebinds_gateway_name(node):
            return []
        if isinstance(node, ast.Call) and len(found) < MAX_CALLS and budget[0] > 0:
            record = _record(node, budget)
            if record is not None:
                found.append((node.lineno, node.col_offset, record))
    found.sort(key=lambda item: (item[0], item[1]))
    return [record for _, _, record in found]


def _rebinds_gateway_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load):
            return node.id in _NAMESPACE_BUILTINS
        return node.id in _GATEWAY_NAMES  # assigned, deleted, a for/with/comprehension target
    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
        # `call_tool.__code__ = ...` changes what the name does without rebinding it.
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in _GATEWAY_NAMES
    if isinstance(node, ast.alias):  # import x as tools, from x import tools, from x import *
        return node.name == "*" or (node.asname or node.name.partition(".")[0]) in _GATEWAY_NAMES
    if isinstance(node, ast.arg):
        return node.arg in _GATEWAY_NAMES
    if isinstance(node, ast.Global | ast.Nonlocal):
        return not _GATEWAY_NAMES.isdisjoint(node.names)
    if isinstance(node, ast.MatchMapping):
        return node.rest in _GATEWAY_NAMES
    # def, class, `except ... as`, match captures, type parameters: each binds its `name`.
    return getattr(node, "name", None) in _GATEWAY_NAMES


def _tool_name(call: ast.Call) -> tuple[str, list[ast.expr]] | None:
    """The tool a call names literally, and its positional arguments after the name; else None."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "tools"
    ):
        server, tool = func.value.attr, func.attr
        # The proxies' own attributes start with `_` (`_server`); no catalog name does.
        if server.startswith("_") or tool.startswith("_"):
            return None
        return f"{server}.{tool}", call.args
    if isinstance(func, ast.Name) and func.id == "call_tool" and call.args:
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and is_tool_name(first.value):
            return first.value, call.args[1:]
    return None


def _record(call: ast.Call, budget: list[int]) -> dict[str, Any] | None:
    named = _tool_name(call)
    if named is None:
        return None
    name, positional = named
    keywords = [kw.arg for kw in call.keywords if kw.arg is not None]
    if len(name) > MAX_NAME_CHARS or len(keywords) > MAX_KEYWORDS:
        return None
    if "self" in keywords and isinstance(call.func, ast.Attribute):
        return None  # the proxy's own `self`: Python refuses the call before it reaches the host
    if any(len(keyword) > MAX_NAME_CHARS for keyword in keywords):
        return None
    cost = len(name) + sum(map(len, keywords))
    if cost > budget[0]:
        budget[0] = 0
        return None
    budget[0] -= cost
    literals: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None or budget[0] <= 0:
            continue
        start = min(MAX_LITERAL_COST, budget[0])
        allowance = [start]
        value = _literal(kw.value, allowance, 0)
        if value is not _NOT_LITERAL:
            literals[kw.arg] = value
            budget[0] -= start - allowance[0]
    return {
        "line": call.lineno,
        "tool": name,
        "positional": sum(not isinstance(arg, ast.Starred) for arg in positional),
        "star_args": any(isinstance(arg, ast.Starred) for arg in positional),
        "keywords": keywords,
        "star_kwargs": any(kw.arg is None for kw in call.keywords),
        "literals": literals,
    }


def _literal(node: ast.expr, allowance: list[int], depth: int) -> Any:
    """The JSON value `node` writes out, within `allowance` (spent as it goes); else _NOT_LITERAL."""
    allowance[0] -= 1
    if allowance[0] < 0 or depth > _MAX_LITERAL_DEPTH:
        return _NOT_LITERAL
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        number = _literal(node.operand, allowance, depth + 1)
        if type(number) not in (int, float):  # bool, too: -True is no JSON literal
            return _NOT_LITERAL
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.Constant):
        return _constant(node.value, allowance)
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal(item, allowance, depth + 1) for item in node.elts]
        return _NOT_LITERAL if any(item is _NOT_LITERAL for item in items) else items
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return _NOT_LITERAL  # a `**` splat (key None), or a key JSON has not
            allowance[0] -= len(key.value)
            item = _literal(value, allowance, depth + 1)
            if item is _NOT_LITERAL:
                return _NOT_LITERAL
            result[key.value] = item
        return result
    return _NOT_LITERAL  # a name, a call, an f-string, a set, an operation: not seen before it runs


def _constant(value: object, allowance: list[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        allowance[0] -= len(value)
        return value if allowance[0] >= 0 else _NOT_LITERAL
    if isinstance(value, int):
        return value if value.bit_length() <= _MAX_INT_BITS else _NOT_LITERAL
    if isinstance(value, float):
        return value if math.isfinite(value) else _NOT_LITERAL  # 1e999 is inf, which JSON has not
    return _NOT_LITERAL  # bytes, complex, Ellipsis
