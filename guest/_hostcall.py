"""The one way out of the sandbox: a JSON call through the `host` import."""

import json
from _json import encode_basestring, make_encoder
from typing import Any

from componentize_py_types import Err
from wit_world.imports import host

__all__ = ["ToolError", "boundary_json", "host_call", "parse_host_json"]

# Every tool call encodes its arguments and decodes its answer, in wasm, metered. `json.dumps` with
# options builds a JSONEncoder, whose `encode` builds the C encoder, on every call: 48,000 fuel for
# `{"i": 1}`, where the C encoder made directly costs 21,000. `json.loads` matches a whitespace
# regex at both ends of text the host writes without any: 24,000 fuel, against 10,000 for
# `raw_decode`. A tool call cost 125,000 fuel in the guest before.
_DECODER = json.JSONDecoder()


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, allow_nan=False)`, for less fuel."""
    # A fresh encoder each time: its `{}` of markers (for circular references) is left holding
    # entries when encoding fails, so one kept across calls could refuse a later value wrongly.
    encode = make_encoder({}, _not_json, encode_basestring, None, ": ", ", ", False, False, False)
    return "".join(encode(value, 0))


def parse_host_json(text: str) -> Any:
    """`json.loads` of JSON the host wrote (compact, nothing around it), for less fuel."""
    return _DECODER.raw_decode(text)[0]


def boundary_json(value: Any) -> str:
    """JSON text that can cross into the host: only UTF-8 crosses, so lone surrogates are escaped."""
    text = _dumps(value)
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
    return parse_host_json(answer)
