"""Check a snippet's tool arguments against the child's inputSchema before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from gateway._catalog import CatalogEntry, properties_of
from gateway._errors import ToolCallError

__all__ = ["prepare_arguments"]


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    options = schema.get("anyOf") or schema.get("oneOf") or []
    return any(isinstance(option, dict) and _accepts_null(option) for option in options)  # pyright: ignore


def _path(error: jsonschema.ValidationError) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return parts.lstrip(".") or "(arguments)"


def prepare_arguments(entry: CatalogEntry, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Map Python names to the child's, drop `None` for optional non-nullable parameters, validate."""
    wire = entry.wire_arguments(arguments)
    properties = properties_of(entry.input_schema)
    # Signatures show optional parameters as `= None`: passing that through would fail at the child.
    wire = {k: v for k, v in wire.items() if v is not None or _accepts_null(properties.get(k, {"type": "null"}))}
    open_schema = entry.input_schema.get("additionalProperties", True) is not False
    unknown = sorted(set(wire) - set(properties))
    if properties and unknown and open_schema:
        # Most child schemas leave additionalProperties open, so a typo would be dropped silently.
        expected = ", ".join(sorted(entry.argument_names)) or "none"
        raise ToolCallError(f"{entry.qualified} got unknown argument(s) {', '.join(unknown)}; it takes: {expected}")
    error = best_match(_validator(json.dumps(entry.input_schema, sort_keys=True)).iter_errors(wire))
    if error is not None:
        raise ToolCallError(
            f"invalid arguments for {entry.qualified}: {_path(error)}: {error.message} (schema rule: {error.validator})"
        )
    return wire
