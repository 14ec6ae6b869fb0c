"""Children given on the command line: `serve -- NAME [--transport stdio|http] ARGS... -- NAME ...`.

Each part between `--` separators is one child: its name, then for stdio the command and its
arguments (passed on as written), for http the URL and `-H "Name: value"` headers. A part that is a
name alone takes the next part as its command, so `-- time -- uvx mcp-server-time` reads as one child.
The entries are `mcpServers` entries, so `${VAR}` is expanded exactly as in a config file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.errors import ConfigError

__all__ = ["SEPARATOR", "parse_children", "split_children"]

SEPARATOR = "--"
_TRANSPORTS = ("stdio", "http")
_USAGE = (
    "write children as: -- NAME COMMAND ARGS... (stdio), or -- NAME --transport http URL "
    "[-H 'Name: value']..."
)
# Commands that start a server, never a server's name: a part that begins with one left its name out.
_LAUNCHERS = frozenset({"uvx", "npx", "pipx", "bunx", "uv", "pnpx"})


def split_children(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """The gateway's own arguments, and the words after the first `--` (None when there is none)."""
    words = list(argv)
    if SEPARATOR not in words:
        return words, None
    at = words.index(SEPARATOR)
    return words[:at], words[at + 1 :]


def _parts(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word == SEPARATOR:
            parts.append([])
        else:
            parts[-1].append(word)
    # A name alone takes the next part as its command: `-- time -- uvx mcp-server-time`.
    joined: list[list[str]] = []
    for part in parts:
        if joined and len(joined[-1]) == 1:
            joined[-1] += part
        else:
            joined.append(part)
    return joined


def _http_entry(name: str, words: list[str]) -> dict[str, Any]:
    if not words or words[0].startswith("-"):
        raise ConfigError(f"child {name!r}: --transport http needs a URL next; {_USAGE}")
    url, rest, headers = words[0], words[1:], dict[str, str]()
    while rest:
        flag, *rest = rest
        if flag not in ("-H", "--header") or not rest:
            raise ConfigError(f"child {name!r}: after the URL only -H 'Name: value' may follow, got {flag!r}")
        header, *rest = rest
        key, colon, value = header.partition(":")
        if not colon or not key.strip():
            raise ConfigError(f"child {name!r}: header {header!r} is not 'Name: value'")
        headers[key.strip()] = value.strip()
    entry: dict[str, Any] = {"type": "http", "url": url}
    return entry | {"headers": headers} if headers else entry


def _entry(part: list[str]) -> tuple[str, dict[str, Any]]:
    if not part:
        raise ConfigError(f"an empty child between two '--'; {_USAGE}")
    name, words = part[0], part[1:]
    if name.startswith("-"):
        raise ConfigError(f"a child's name comes first, got {name!r}; {_USAGE}")
    if name in _LAUNCHERS or "/" in name or "://" in name:
        example = " ".join(["time", *part]) if name in _LAUNCHERS else "NAME " + " ".join(part)
        raise ConfigError(f"a child's name comes first, then its command: -- {example}; {_USAGE}")
    transport = "stdio"
    if words[:1] == ["--transport"] or words[:1] == ["-t"]:
        if len(words) < 2 or words[1] not in _TRANSPORTS:
            raise ConfigError(f"child {name!r}: --transport takes stdio or http")
        transport, words = words[1], words[2:]
    if transport == "http":
        return name, _http_entry(name, words)
    if not words:
        raise ConfigError(f"child {name!r} has no command; {_USAGE}")
    if "://" in words[0]:
        url = words[0]
        raise ConfigError(f"child {name!r}: {url!r} is a URL: write -- {name} --transport http {url}")
    return name, {"command": words[0], "args": words[1:]}


def parse_children(words: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The `mcpServers` entries the words after `--` name, in order (ConfigError on a malformed one)."""
    if not words:
        raise ConfigError(f"nothing follows '--'; {_USAGE}")
    entries: dict[str, dict[str, Any]] = {}
    for part in _parts(list(words)):
        name, entry = _entry(part)
        if name in entries:
            raise ConfigError(f"child {name!r} is given twice on the command line")
        entries[name] = entry
    return entries
