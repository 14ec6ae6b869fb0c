"""Configs other clients write: what the gateway honours, ignores with a note, or refuses with advice.

Cursor, Windsurf, Cline and Roo Code write `mcpServers` entries with keys of their own; VS Code
writes `servers` and `inputs` instead. And `claude mcp add --scope project` writes the gateway's own
entry into the `.mcp.json` a team may point `--config` at: run, it would start itself again and again.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gateway.children.config import IGNORED_ENTRY_KEYS
from gateway.shared import as_array

__all__ = [
    "disabled_note",
    "disabled_tools_problem",
    "ignored_key_notes",
    "layout_problems",
    "python_name",
    "runs_this_gateway",
    "self_note",
]

_GATEWAY_WORD = re.compile(
    r"codemode[-_]gateway(?:\[[^\]]*\])?(?:(?:==|>=|<=|~=|!=|@|>|<)\S*)?", re.IGNORECASE
)
"""`codemode-gateway`, as a command or a package spec (`codemode-gateway==1.2`, `codemode-gateway@latest`)."""
_LAUNCHER = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?w?|py|uv", re.IGNORECASE)
_GATEWAY_MODULES = ("gateway", "gateway.__main__")


def layout_problems(top: dict[str, Any]) -> list[str]:
    """VS Code's `.vscode/mcp.json` keys, each as a line saying what to write instead."""
    problems: list[str] = []
    if "servers" in top:
        problems.append(
            'servers: this is VS Code\'s layout (.vscode/mcp.json); move the entries under "mcpServers"'
        )
    if "inputs" in top:
        problems.append(
            "inputs: VS Code prompts for these, and the gateway has no prompts: replace each "
            '${input:...} with a ${VAR} environment reference, then remove "inputs"'
        )
    return problems


def disabled_note(where: str) -> str:
    return f'{where}: left out, as its "disabled": true says'


def ignored_key_notes(fields: dict[str, Any], where: str) -> list[str]:
    """A note for each key of another client that the gateway ignores, saying what to use instead."""
    return [
        f"{where}.{key}: ignored; {instead}"
        for key, instead in IGNORED_ENTRY_KEYS.items()
        if key in fields and not (key == "disabledTools" and fields[key])
    ]


def python_name(name: str) -> str:
    """A local approximation of the Python name search_docs shows for a server or tool name.

    The exact rule (`gateway.catalog`'s identifiers, with collision suffixes) sits in a wing the
    config does not import; this one turns runs of other characters into `_`, as that rule does.
    """
    name = re.sub(r"[^0-9A-Za-z_]+", "_", name).strip("_") or "_"
    return "_" + name if name[0].isdigit() else name


def disabled_tools_problem(fields: dict[str, Any], where: str, server: str) -> str | None:
    """Windsurf's and Roo Code's `disabledTools`: ignoring a non-empty one would expose those tools."""
    tools = [tool for tool in as_array(fields.get("disabledTools")) if isinstance(tool, str)]
    if not tools:
        return None
    hidden = json.dumps([f"{python_name(server)}.{python_name(tool)}" for tool in tools])
    return (
        f"{where}.disabledTools: the gateway does not disable tools per entry, so these would stay "
        f'callable; hide them instead: "policy": {{"hidden": {hidden}}}'
    )


def _basename(word: str) -> str:
    name = re.split(r"[\\/]", word)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def runs_this_gateway(fields: dict[str, Any]) -> str | None:
    """The key (`command`, `args[1]`) by which a stdio entry runs codemode-gateway itself, or None.

    `codemode-gateway` as the command (any path to it), as an argument (`uvx codemode-gateway`,
    `pipx run codemode-gateway`, `uvx --from ... codemode-gateway`), or a Python running `-m gateway`.
    """
    if fields.get("type", "stdio") != "stdio" or not isinstance(command := fields.get("command"), str):
        return None
    if _GATEWAY_WORD.fullmatch(_basename(command)):
        return "command"
    args = [arg if isinstance(arg, str) else "" for arg in as_array(fields.get("args"))]
    launched = _LAUNCHER.fullmatch(_basename(command)) is not None
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        # A bare word only: a path argument (`--repository ~/src/codemode-gateway`) is not the gateway,
        # unless `serve` follows it.
        if _GATEWAY_WORD.fullmatch(arg) or (_GATEWAY_WORD.fullmatch(_basename(arg)) and following == "serve"):
            return f"args[{index}]"
        if launched and (
            (arg == "-m" and following in _GATEWAY_MODULES) or arg in [f"-m{m}" for m in _GATEWAY_MODULES]
        ):
            return f"args[{index + 1}]" if arg == "-m" else f"args[{index}]"
        launched = launched or _LAUNCHER.fullmatch(_basename(arg)) is not None
    return None


def self_note(where: str) -> str:
    return f"{where}: left out: it runs codemode-gateway, which would start itself again"
