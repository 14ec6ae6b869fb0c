"""Check a snippet's tool arguments against the child's inputSchema before anything is sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]  # stubs leave it open
from jsonschema.protocols import Validator

from gateway._json import as_array, as_object, properties_of
from gateway._json_schema import linear_validator
from gateway.catalog._catalog import CatalogEntry
from gateway.errors import ToolCallError

__all__ = ["prepare_arguments"]


# id(schema) -> (schema, validator). Holding the schema keeps its id from being reused; a catalog
# rebuilt with new schemas simply adds entries, and the whole cache is dropped past its bound.
_validators: dict[int, tuple[Mapping[str, Any], Validator]] = {}
_MAX_VALIDATORS = 2048


def _validator(schema: Mapping[str, Any]) -> Validator:
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_validators) >= _MAX_VALIDATORS:
        _validators.clear()
    # Linear in the arguments (uniqueItems, patterns), since it runs on the event loop. A pattern
    # RE2 cannot run (a backreference, a lookaround) is skipped and left to the child: checking the
    # child's own schema here is a courtesy that saves a round trip, not a policy.
    validator = linear_validator(schema, skip_unrunnable_patterns=True)
    _validators[id(schema)] = (schema, validator)
    return validator


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    options = as_array(schema.get("anyOf")) or as_array(schema.get("oneOf"))
    return any(_accepts_null(option) for option in map(as_object, options) if option is not None)


def _path(error: object) -> str:
    where: list[str | int] = list(getattr(error, "absolute_path", []))
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)
    return parts.lstrip(".") or "(arguments)"


def prepare_arguments(entry: CatalogEntry, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Map Python names to the child's, drop `None` for optional non-nullable parameters, validate."""
    wire = entry.wire_arguments(arguments)
    properties = properties_of(entry.input_schema)
    # Signatures show optional parameters as `= None`: passing that through would fail at the child.
    wire = {
        k: v for k, v in wire.items() if v is not None or _accepts_null(properties.get(k, {"type": "null"}))
    }
    open_schema = entry.input_schema.get("additionalProperties", True) is not False
    unknown = sorted(set(wire) - set(properties))
    if properties and unknown and open_schema:
        # Most child schemas leave additionalProperties open, so a typo would be dropped silently.
        expected = ", ".join(sorted(entry.argument_names)) or "none"
        raise ToolCallError(
            f"{entry.qualified} got unknown argument(s) {', '.join(unknown)}; it takes: {expected}"
        )
    validator = _validator(entry.input_schema)
    if validator.is_valid(wire):  # the common case, without building an error tree
        return wire
    found = validator.iter_errors(wire)
    error = cast(object, best_match(found))  # the stubs leave its return type open
    if error is not None:
        message, rule = getattr(error, "message", ""), getattr(error, "validator", "")
        raise ToolCallError(
            f"invalid arguments for {entry.qualified}: {_path(error)}: {message} (schema rule: {rule})"
        )
    return wire
