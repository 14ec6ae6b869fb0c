"""Narrowing parsed JSON (and JSON Schema) values to the shapes the code expects, without copying them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["as_array", "as_object", "properties_of"]


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
