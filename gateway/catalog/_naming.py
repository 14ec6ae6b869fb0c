"""Python identifiers for server, tool and parameter names, with deterministic collision suffixes.

The model writes `tools.<server>.<tool>(<param>=...)`, so every name it sees must be a valid,
non-keyword identifier; the original names are kept beside them for the actual MCP call.
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable, Mapping

from mcp.types import Tool

__all__ = ["assign_identifiers", "first_of_each_name", "server_identifiers", "split_words", "to_identifier"]

_INVALID = re.compile(r"[^0-9A-Za-z_]+")
# camelCase and digit boundaries: "getHTTPResponse2xx" -> get HTTP Response 2 xx.
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def to_identifier(name: str, fallback: str = "tool") -> str:
    """`get-sum` -> `get_sum`, `class` -> `class_`, `3d` -> `_3d`, `` -> `fallback`; camelCase is kept."""
    # Accents go rather than whole words: `café` -> `cafe`, not `caf_`.
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    # Leading underscores go too: the guest's proxies refuse dunder names, and `_x` reads as private.
    ident = _INVALID.sub("_", ascii_name).strip("_")
    if not ident:
        ident = fallback
    if ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def assign_identifiers(
    names: Iterable[str], fallback: str = "tool", *, claimed: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Map each distinct name to a unique identifier, the same whatever the input order.

    A name that already is its own identifier keeps it; the others claim theirs in sorted order,
    the later ones suffixed `_2`, `_3`, ... `claimed` names keep the identifiers given there, which
    the others go around.
    """
    claimed = claimed or {}
    unique = sorted(set(names) - set(claimed))
    base = {name: to_identifier(name, fallback) for name in unique}
    taken = set(claimed.values())
    result = {name: name for name in unique if base[name] == name and name not in taken}
    taken |= set(result.values())
    for name in unique:
        if name in result:
            continue
        candidate, n = base[name], 2
        while candidate in taken:
            candidate = f"{base[name]}_{n}"
            n += 1
        result[name] = candidate
        taken.add(candidate)
    return {**claimed, **result}


def server_identifiers(names: Iterable[str]) -> dict[str, str]:
    """Each server's Python name among these servers: what search_docs shows and policy rules match."""
    return assign_identifiers(names, fallback="server")


def split_words(name: str) -> list[str]:
    """The words of a snake, kebab or camelCase name, digits apart: `getHTTPStatus_2` -> get HTTP Status 2."""
    return _WORDS.findall(name)


def first_of_each_name(tools: Iterable[Tool]) -> list[Tool]:
    """Each name's first tool: a server that lists one name twice gets its first definition only."""
    seen: set[str] = set()
    kept: list[Tool] = []
    for tool in tools:
        if tool.name not in seen:  # calls go by name, so a second definition could never be called
            seen.add(tool.name)
            kept.append(tool)
    return kept
