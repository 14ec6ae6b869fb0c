"""Validation errors as sentences: one line per problem, its key path first, a did-you-mean for typos.

pydantic's own wording ("Field required", "Extra inputs are not permitted") is replaced where it
says less than it could: an unknown key is compared (difflib) with the keys the model takes at that
path, and a missing key is named.
"""

from __future__ import annotations

import difflib
import json
import types
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import ErrorDetails

from gateway.children.config import IGNORED_ENTRY_KEYS, SERVER_TYPES, HttpServer, SseServer, StdioServer

__all__ = ["did_you_mean", "error_lines", "key_path", "model_titled"]

_SERVER_MODELS: tuple[type[BaseModel], ...] = (StdioServer, HttpServer, SseServer)
_NEEDS = {
    StdioServer: 'a stdio server needs "command" (a remote one needs "url")',
    HttpServer: 'an http server needs "url"',
    SseServer: 'an sse server needs "url"',
}


def key_path(loc: Sequence[int | str]) -> str:
    """`("mcpServers", "x", "args", 2)` -> `mcpServers.x.args[2]`; a dotted key is quoted: `tools["a.b"]`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "." in part and path:  # a namespaced tool name as a key: policy.tools["git.git_log"]
            path += f"[{json.dumps(part)}]"
        else:
            path += f".{part}" if path else part
    return path or "(top level)"


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """`; did you mean "x"?` for the closest candidate (letter case aside), or "" when none is close."""
    by_lower = {candidate.lower(): candidate for candidate in reversed(candidates)}  # the first wins
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1)
    return f'; did you mean "{by_lower[close[0]]}"?' if close else ""


def _alternatives(annotation: Any) -> Iterator[tuple[Any, str | None]]:
    """The types an annotation may hold, through Annotated, Optional and unions, with their union tag."""
    tag: str | None = None
    while get_origin(annotation) is Annotated:
        annotation, *metadata = get_args(annotation)
        tag = next((item.tag for item in metadata if isinstance(item, Tag)), tag)
    if get_origin(annotation) in (Union, types.UnionType):
        for member in get_args(annotation):
            yield from _alternatives(member)
    elif annotation is not type(None):
        yield annotation, tag


def _step(annotation: Any, part: int | str) -> list[Any]:
    """What sits under `part` of a value of this type (a field, a mapping's value, a list's item)."""
    found: list[Any] = []
    members = list(_alternatives(annotation))
    tagged = [member for member, tag in members if tag is not None and tag == part]
    if tagged:  # a discriminated union puts the tag it chose into the location
        return tagged
    for member, _ in members:
        origin = get_origin(member)
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(part, str):
            found += [
                info.annotation for name, info in member.model_fields.items() if part in (name, info.alias)
            ]
        elif origin is dict and isinstance(part, str):
            found.append(get_args(member)[1])
        elif origin is list and isinstance(part, int):
            found.append(get_args(member)[0])
    return found


def _models_at(root: type[BaseModel], loc: Sequence[int | str]) -> list[type[BaseModel]]:
    annotations: list[Any] = [root]
    for part in loc:
        annotations = [found for annotation in annotations for found in _step(annotation, part)]
    return [
        member
        for annotation in annotations
        for member, _ in _alternatives(annotation)
        if isinstance(member, type) and issubclass(member, BaseModel)
    ]


def _keys(model: type[BaseModel], *, documented: bool = False) -> list[str]:
    """The keys a model takes as written (aliases), without the other clients' keys it only ignores;
    `documented` leaves out the field names a model also takes beside their aliases (`mcp_servers`)."""
    keys: list[str] = []
    for name, info in model.model_fields.items():
        if info.alias in IGNORED_ENTRY_KEYS:
            continue
        keys.append(info.alias or name)
        if info.alias and model.model_config.get("populate_by_name") and not documented:
            keys.append(name)
    return keys


def _unknown_key(models: list[type[BaseModel]], key: str) -> str:
    message = f'unknown key "{key}"'
    servers = [model for model in models if model in _SERVER_MODELS]
    if servers:
        others = [model for model in _SERVER_MODELS if model not in servers and key in _keys(model)]
        if key in ("url", "serverUrl") and StdioServer in servers:
            return f'{message}: an entry has "command" (stdio) or "url" (remote), not both'
        if StdioServer in others:
            return f'{message}: "{key}" is for a stdio server, not a remote one'
        if others:
            return f'{message}: "{key}" is for a remote server, not a stdio one'
    return message + did_you_mean(key, [k for model in models for k in _keys(model, documented=True)])


def _sentence(error: ErrorDetails, root: type[BaseModel] | None) -> tuple[tuple[int | str, ...], str]:
    """Where the problem is (a location) and what it is, as a sentence."""
    loc = tuple(error["loc"])
    kind, message = error["type"], error["msg"].removeprefix("Value error, ")
    parent = _models_at(root, loc[:-1]) if root is not None and loc else []
    if kind == "extra_forbidden" and loc:
        return loc, _unknown_key(parent, str(loc[-1]))
    if kind == "missing" and loc:
        need = next((_NEEDS[model] for model in parent if model in _NEEDS), None)
        return loc[:-1], need if need is not None else f'"{loc[-1]}" is required'
    if kind == "server_type" and not isinstance(error["input"], dict):
        return loc, 'an entry is an object, with "command" (a stdio server) or "url" (a remote one)'
    if kind == "model_type" and not loc:
        return loc, 'the config is a JSON object, with the child servers under "mcpServers"'
    return loc, message


def _shown(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    if len(loc) > 2 and loc[0] == "mcpServers" and loc[2] in SERVER_TYPES.values():
        loc = loc[:2] + loc[3:]  # drop the union's tag: users wrote `mcpServers.x.args`, not `.stdio.args`
    return loc


def error_lines(exc: ValidationError, root: type[BaseModel] | None) -> list[tuple[str, str]]:
    """Each error as (key path, its line); `root` is the model validated, for the keys it takes."""
    lines: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        loc, sentence = _sentence(error, root)
        path = key_path(_shown(loc))
        lines.append((key_path(_shown(tuple(error["loc"]))), f"{path}: {sentence}"))
    return lines


def model_titled(title: str, root: type[BaseModel]) -> type[BaseModel] | None:
    """The model, `root` or one of its sections, that a ValidationError's title names."""
    seen: list[type[BaseModel]] = []
    pending: list[Any] = [root]
    while pending:
        for member, _ in _alternatives(pending.pop()):
            if get_origin(member) in (dict, list):
                pending += get_args(member)
            elif isinstance(member, type) and issubclass(member, BaseModel) and member not in seen:
                seen.append(member)
                pending += [info.annotation for info in member.model_fields.values()]
    return next((m for m in seen if title in (m.__name__, m.model_config.get("title"))), None)
