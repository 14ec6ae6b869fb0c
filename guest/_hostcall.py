"""The one way out of the sandbox: a JSON call through the `host` import."""

import json
from typing import Any

from componentize_py_types import Err
from wit_world.imports import host

__all__ = ["ToolError", "boundary_json", "host_call"]


def boundary_json(value: Any) -> str:
    """JSON text that can cross into the host: only UTF-8 crosses, so lone surrogates are escaped."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=False)
    return text


class ToolError(Exception):
    """A tool call failed: the child said so, or the gateway refused it. Catch it and recover."""

    def __init__(self, message: str, *, tool: str = "", kind: str = "ToolError") -> None:
        super().__init__(message)
        self.tool = tool
        self.kind = kind
        self.message = message


ToolError.__module__ = "builtins"  # tracebacks show `ToolError: ...`, not a guest path


def host_call(name: str, payload: Any) -> Any:
    """Call the host with a JSON payload and return its decoded JSON answer."""
    try:
        args_json = boundary_json(payload)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"arguments to {name} must be JSON values: {exc}") from None
    try:
        answer = host.call(name, args_json)
    except Err as err:  # pyright: ignore[reportUnknownVariableType]  # generic in the generated bindings
        info = json.loads(str(err.value))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        raise ToolError(
            info.get("message", "tool call failed"), tool=name, kind=info.get("type", "ToolError")
        ) from None
    return json.loads(answer)
