"""`${VAR}`, `${env:VAR}` and `${VAR:-default}` in server entries, expanded from the gateway's environment.

Expansion records where a variable is missing (which leaves only that entry out, as Claude Code
does) and which values it took from the environment (so that they can be redacted wherever they
show up later). References other clients expand and the gateway cannot (VS Code's `${input:...}`
prompts, Windsurf's `${file:...}`, the editors' `${workspaceFolder}`) are explained, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.shared import as_array, as_object

__all__ = ["VARIABLE_REFERENCE", "Expander", "Unresolved"]

VARIABLE_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${NAME}`, `${env:NAME}` (Cursor, Windsurf) or `${NAME:-default}`: group 1 is the name, group 2
the default (None if absent)."""
_OTHER_CLIENT_REFERENCE = re.compile(r"\$\{(input|file|command|config):([^}]*)\}|\$\{/\}")
# Variables the editors (Cursor, VS Code) define themselves; here they are only environment variables.
_EDITOR_VARIABLES = frozenset(
    {"userHome", "workspaceFolder", "workspaceFolderBasename", "pathSeparator", "cwd", "fileDirname"}
)
_ONLY_ENVIRONMENT = "the gateway expands only environment variables (${NAME}, ${env:NAME})"
_EXPANDED_STRINGS = ("command", "cwd", "url", "serverUrl")
_EXPANDED_LISTS = ("args",)
_EXPANDED_MAPS = ("env", "headers")


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A reference that could not be expanded: where it is, and why."""

    where: str
    what: str

    @property
    def line(self) -> str:
        return f"{self.where}: {self.what}"


def _variable_name(text: str) -> str:
    """`github_token` -> `GITHUB_TOKEN`: a variable name to suggest for a prompt's id."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()
    return name if re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) else "NAME"


def _other_client_reference(match: re.Match[str]) -> str:
    kind, rest = match.group(1), match.group(2)
    if kind == "input":
        return (
            f"{match.group(0)} is a VS Code prompt, and the gateway has no prompts: "
            f"use an environment variable, ${{{_variable_name(rest)}}}"
        )
    if kind == "file":
        return f"{match.group(0)} reads a file (Windsurf), and {_ONLY_ENVIRONMENT}"
    return f"{match.group(0)} is an editor variable (Cursor, VS Code), and {_ONLY_ENVIRONMENT}"


class Expander:
    """Expands references, recording where they cannot be expanded and which values were secret."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.secrets: dict[str, str] = {}  # value -> the variable it came from
        self._unresolved: list[Unresolved] = []

    def expand(self, value: Any, where: str) -> Any:
        if not isinstance(value, str):
            return value  # validation reports the wrong type
        others = list(_OTHER_CLIENT_REFERENCE.finditer(value))
        if others:
            self._unresolved += [Unresolved(where, _other_client_reference(match)) for match in others]
            return value
        matches = list(VARIABLE_REFERENCE.finditer(value))
        if value.count("${") != len(matches):
            self._unresolved.append(
                Unresolved(where, "malformed variable reference (write ${NAME} or ${NAME:-default})")
            )
            return value
        return VARIABLE_REFERENCE.sub(lambda match: self._lookup(match, where), value)

    def _lookup(self, match: re.Match[str], where: str) -> str:
        name, default = match.group(1), match.group(2)
        found = self.environ.get(name)
        if found is None or (found == "" and default is not None):  # `:-` also covers empty, as in the shell
            if default is None:
                self._unresolved.append(Unresolved(where, self._unset(match.group(0), name)))
                return match.group(0)
            return default
        if found:
            self.secrets.setdefault(found, name)
        return found

    @staticmethod
    def _unset(reference: str, name: str) -> str:
        if name == "userHome":
            return f"{reference} is an editor variable (Cursor, VS Code): write ${{HOME}} instead"
        if name in _EDITOR_VARIABLES:
            return f"{reference} is an editor variable (Cursor, VS Code), and {_ONLY_ENVIRONMENT}"
        return f"{reference} is not set"

    def one(self, value: str, where: str) -> tuple[str, list[Unresolved]]:
        """One value with its references expanded, and the ones that could not be."""
        self._unresolved = []
        return self.expand(value, where), self._unresolved

    def entry(self, fields: dict[str, Any], where: str) -> tuple[dict[str, Any], list[Unresolved]]:
        """One server entry with its references expanded, and the ones that could not be."""
        self._unresolved = []
        out = dict(fields)
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
        return out, self._unresolved
