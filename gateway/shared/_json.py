"""Narrowing parsed JSON (and JSON Schema) values to the shapes the code expects, without copying them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["MAX_JSON_DEPTH", "as_array", "as_object", "nesting_depth", "properties_of"]

MAX_JSON_DEPTH = 64
"""The deepest JSON that crosses the sandbox's boundary, either way: children, schema validators, the
redactor and the SDK all recurse on nesting, and no real tool call or answer nests this deep."""


def as_object(value: object) -> dict[str, Any] | None:
    """`value` if it is a JSON object (keys of parsed JSON are strings), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_array(value: object) -> list[Any]:
    """`value` if it is a JSON array, else an empty list."""
    return cast("list[Any]", value) if isinstance(value, list) else []


def properties_of(schema: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """An object schema's properties, in order (a property whose schema is `true` counts as `{}`)."""
    properties = as_object(schema.get("properties")) if schema else None
    if properties is None:
        return {}
    return {str(name): as_object(sub) or {} for name, sub in properties.items()}


def nesting_depth(value: object, *, finite: bool = False) -> int:
    """How deep a parsed JSON value nests (a scalar is 1), without recursion; with `finite`, a
    ValueError for a float JSON cannot hold (a literal too large for one)."""
    # Level by level: each level's children are gathered by `extend`, far cheaper than a stack of pairs.
    depth, level = 0, [value]
    while level:
        depth += 1
        below: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                below.extend(cast("dict[str, Any]", item).values())
            elif isinstance(item, list):
                below.extend(cast("list[Any]", item))
            elif finite and isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"{item} is not a JSON number (a literal too large for a float)")
        level = below
    return depth
