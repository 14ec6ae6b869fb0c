"""Check a snippet's tool arguments against the child's inputSchema before anything is sent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from gateway.catalog._catalog import CatalogEntry
from gateway.errors import ToolCallError
from gateway.shared import as_array, as_object, properties_of

if TYPE_CHECKING:  # jsonschema loads with the first schema walked (`_validator`), not with the catalog
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["argument_refusal", "prepare_arguments"]


# id(schema) -> (schema, validator). Holding the schema keeps its id from being reused; a catalog
# rebuilt with new schemas simply adds entries, and the whole cache is dropped past its bound.
_validators: dict[int, tuple[Mapping[str, Any], Validator]] = {}
_MAX_VALIDATORS = 2048

# Keywords that constrain no value, in every draft.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly",
     "writeOnly"}
)  # fmt: skip
_FLAT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})
_PROPERTY_KEYWORDS = _ANNOTATIONS | {"type"}
# A scalar type, as the exact Python types of a JSON value that fit it in every draft (a float that
# is whole fits `integer` in some drafts only: it is left to the validator).
_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


@dataclass(frozen=True)
class _FlatObject:
    """An inputSchema of an object whose properties each take one scalar type, as most tools' are:
    arguments that fit it are valid without a walk through jsonschema's validator."""

    types: dict[str, tuple[type, ...]]  # each property's exact value types
    required: frozenset[str]
    closed: bool  # additionalProperties: false

    def fits(self, wire: Mapping[str, Any]) -> bool:
        """True when `wire` is certainly valid; False when the validator must say."""
        if not self.required <= wire.keys():
            return False
        for name, value in wire.items():
            types = self.types.get(name)
            if types is None and self.closed:
                return False
            if types is not None and type(value) not in types:
                return False
        return True


def _flat_object(schema: Mapping[str, Any]) -> _FlatObject | None:
    """The schema as a `_FlatObject` if it is one (nothing but those keywords), else None."""
    if schema.get("type") != "object" or not set(schema) <= _ANNOTATIONS | _FLAT_KEYWORDS:
        return None
    properties = as_object(schema.get("properties", {}))
    required: object = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if properties is None or not isinstance(required, list) or not isinstance(additional, bool):
        return None
    types: dict[str, tuple[type, ...]] = {}
    for name, value in properties.items():
        prop = as_object(value)
        kind = prop.get("type") if prop is not None else None
        if (
            prop is None
            or not isinstance(kind, str)
            or kind not in _SCALARS
            or not set(prop) <= _PROPERTY_KEYWORDS
        ):
            return None
        types[name] = _SCALARS[kind]
    names = cast("list[Any]", required)
    if not all(isinstance(name, str) for name in names):
        return None
    return _FlatObject(types, frozenset(names), closed=not additional)


_flat: dict[int, tuple[Mapping[str, Any], _FlatObject | None]] = {}  # as `_validators`


def _validator(schema: Mapping[str, Any]) -> Validator:
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_validators) >= _MAX_VALIDATORS:
        _validators.clear()
    # Linear in the arguments (uniqueItems, patterns), since it runs on the event loop. A pattern
    # RE2 cannot run (a backreference, a lookaround) is skipped and left to the child: checking the
    # child's own schema here is a courtesy that saves a round trip, not a policy.
    from gateway.shared.json_schema import linear_validator

    validator = linear_validator(schema, skip_unrunnable_patterns=True)
    _validators[id(schema)] = (schema, validator)
    return validator


def _flat_of(schema: Mapping[str, Any]) -> _FlatObject | None:
    cached = _flat.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_flat) >= _MAX_VALIDATORS:
        _flat.clear()
    flat = _flat_object(schema)
    _flat[id(schema)] = (schema, flat)
    return flat


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


def _wire(entry: CatalogEntry, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Python names back to the child's; `None` dropped where the parameter does not take it."""
    wire = entry.wire_arguments(arguments)
    properties = properties_of(entry.input_schema)
    # Signatures show optional parameters as `= None`: passing that through would fail at the child.
    return {
        k: v for k, v in wire.items() if v is not None or _accepts_null(properties.get(k, {"type": "null"}))
    }


_NAMED_UNKNOWN = 10  # a refusal names this many unknown keywords, then counts the rest


def _unknown_arguments(entry: CatalogEntry, names: Iterable[str]) -> str | None:
    """The refusal of keywords the schema does not list, where an open schema would let them pass."""
    properties = properties_of(entry.input_schema)
    open_schema = entry.input_schema.get("additionalProperties", True) is not False
    unknown = sorted(set(names) - set(properties))
    if properties and unknown and open_schema:
        # Most child schemas leave additionalProperties open, so a typo would be dropped silently.
        expected = ", ".join(sorted(entry.argument_names)) or "none"
        named = ", ".join(unknown[:_NAMED_UNKNOWN])
        more = f" and {len(unknown) - _NAMED_UNKNOWN:,} more" if len(unknown) > _NAMED_UNKNOWN else ""
        return f"{entry.qualified} got unknown argument(s) {named}{more}; it takes: {expected}"
    return None


def _schema_violation(entry: CatalogEntry, errors: Iterable[ValidationError]) -> str | None:
    """The refusal naming the most relevant of `errors` (as jsonschema ranks them), if any."""
    from gateway.shared.json_schema import best_error, short_message  # loaded by `_validator` already

    error = best_error(errors)
    if error is None:
        return None
    return (
        f"invalid arguments for {entry.qualified}: {_path(error)}: {short_message(error)} "
        f"(schema rule: {error.validator})"
    )


def prepare_arguments(entry: CatalogEntry, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Map Python names to the child's, drop `None` for optional non-nullable parameters, validate."""
    wire = _wire(entry, arguments)
    refusal = _unknown_arguments(entry, wire)
    if refusal is None:
        flat = _flat_of(entry.input_schema)
        if flat is not None and flat.fits(wire):
            return wire
        validator = _validator(entry.input_schema)
        if validator.is_valid(wire):  # the common case, without building an error tree
            return wire
        refusal = _schema_violation(entry, validator.iter_errors(wire))
    if refusal is not None:
        raise ToolCallError(refusal)
    return wire


# Root keywords whose verdict depends on keys alone (or on nothing): with every value known but
# some, a violation of these is certain. Any other root keyword (anyOf, allOf, $ref, if,
# dependentSchemas, minProperties, ...) may read the values not seen, so nothing is judged.
_KEY_ONLY_ROOT = frozenset(
    {
        "$schema", "$id", "$comment", "$defs", "definitions", "title", "description", "default",
        "examples", "deprecated", "readOnly", "writeOnly", "type", "properties", "required",
        "additionalProperties", "patternProperties", "propertyNames",
    }
)  # fmt: skip
_UNSEEN = ""  # stands for a value not seen: not None, so `_wire` keeps its key as it would the real one


def argument_refusal(
    entry: CatalogEntry, seen: Mapping[str, Any], unseen: Iterable[str], *, all_keywords: bool
) -> str | None:
    """What `prepare_arguments` would refuse a call with, where that is certain before it runs.

    `seen` maps Python keyword names to their literal values; `unseen` names keywords whose values
    are not known yet; `all_keywords` is False when more may come (a `**` splat). What is not seen
    is taken to be valid, so a refusal is one the call will certainly meet, worded as it will be
    whenever the rest of the call is right; None when nothing is certain.
    """
    unseen_wire = {entry.argument_names.get(name, name) for name in unseen}
    wire = _wire(entry, {**dict.fromkeys(unseen, _UNSEEN), **seen})
    if all_keywords and (refusal := _unknown_arguments(entry, wire)) is not None:
        return refusal
    if (unseen_wire or not all_keywords) and not set(entry.input_schema) <= _KEY_ONLY_ROOT:
        return None
    validator = _validator(entry.input_schema)
    if validator.is_valid(wire):
        return None
    # An error inside an unseen value is not certain; nor, with a splat, one about the keys.
    certain = (
        error
        for error in validator.iter_errors(wire)
        if (error.absolute_path[0] not in unseen_wire if error.absolute_path else all_keywords)
    )
    return _schema_violation(entry, certain)
