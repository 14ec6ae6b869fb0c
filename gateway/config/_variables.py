"""`${VAR}` and `${VAR:-default}` in server entries, expanded from the gateway's environment.

Expansion records where a variable is missing and which values it took from the environment (so
that they can be redacted wherever they show up later).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway._json import as_array, as_object

__all__ = ["VARIABLE_REFERENCE", "Expander", "expand_servers"]

VARIABLE_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${NAME}` or `${NAME:-default}`: group 1 is the name, group 2 the default (None if absent)."""
_EXPANDED_STRINGS = ("command", "cwd", "url")
_EXPANDED_LISTS = ("args",)
_EXPANDED_MAPS = ("env", "headers")


class Expander:
    """Expands `${VAR}` / `${VAR:-default}`, recording where variables are missing and what was secret."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.problems: list[str] = []
        self.secrets: dict[str, str] = {}  # value -> the variable it came from

    def expand(self, value: Any, where: str) -> Any:
        if not isinstance(value, str):
            return value  # validation reports the wrong type
        matches = list(VARIABLE_REFERENCE.finditer(value))
        if value.count("${") != len(matches):
            self.problems.append(
                f"{where}: malformed variable reference (write ${{NAME}} or ${{NAME:-default}})"
            )
            return value
        return VARIABLE_REFERENCE.sub(lambda match: self._lookup(match, where), value)

    def _lookup(self, match: re.Match[str], where: str) -> str:
        name, default = match.group(1), match.group(2)
        found = self.environ.get(name)
        if found is None or (found == "" and default is not None):  # `:-` also covers empty, as in the shell
            if default is None:
                self.problems.append(f"{where}: ${{{name}}} is not set")
                return match.group(0)
            return default
        if found:
            self.secrets.setdefault(found, name)
        return found

    def server(self, entry: dict[str, Any], where: str) -> dict[str, Any]:
        out = dict(entry)
        for key in _EXPANDED_STRINGS:
            if key in out:
                out[key] = self.expand(out[key], f"{where}.{key}")
        for key in _EXPANDED_LISTS:
            if isinstance(out.get(key), list):
                items = as_array(out[key])
                out[key] = [self.expand(item, f"{where}.{key}[{i}]") for i, item in enumerate(items)]
        for key in _EXPANDED_MAPS:
            if (pairs := as_object(out.get(key))) is not None:
                out[key] = {k: self.expand(v, f"{where}.{key}.{k}") for k, v in pairs.items()}
        return out


def expand_servers(data: Any, environ: Mapping[str, str]) -> tuple[Any, Expander]:
    """The config data with `${VAR}` expanded in every server entry, and the expander that did it."""
    expander = Expander(environ)
    top = as_object(data)
    servers = as_object(top.get("mcpServers")) if top is not None else None
    if top is None or servers is None:
        return data, expander  # validation reports the wrong shape
    expanded: dict[str, Any] = {}
    for name, entry in servers.items():
        fields = as_object(entry)
        expanded[name] = expander.server(fields, f"mcpServers.{name}") if fields is not None else entry
    return {**top, "mcpServers": expanded}, expander
