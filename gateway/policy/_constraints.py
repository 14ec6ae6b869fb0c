"""Argument constraints: `policy.tools[name].args` JSON Schema fragments, compiled to fail closed.

A fragment is checked against the metaschema and for anything that would silently be a no-op, then
tightened (implied `type` and `required`, ECMA-262 `pattern`) and run on the final wire arguments,
after a hygiene pass that refuses look-alike keys and strings (see `Constraint`).
"""

from __future__ import annotations

import copy
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, NoReturn, cast

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match  # pyright: ignore[reportUnknownVariableType]
from jsonschema.protocols import Validator

from gateway._json import as_array, as_object
from gateway.catalog import CatalogEntry
from gateway.errors import PolicyDenied

__all__ = ["Constraint", "fragment_problems"]

Path = tuple[str | int, ...]

_BASE = jsonschema.Draft202012Validator
_FORMATS = _BASE.FORMAT_CHECKER
# jsonschema's email checks only test for "@": a false sense of safety.
_WEAK_FORMATS = frozenset({"email", "idn-email"})
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_KEYWORDS = (
    frozenset(_BASE.VALIDATORS) - {"$ref", "$dynamicRef"} | {"minContains", "maxContains"} | _ANNOTATIONS
)
_ONE_SCHEMA = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "then",
    "else",
    "not",
    "if",
)
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_IMPLIED_TYPES = {
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "string": ("pattern", "minLength", "maxLength", "format"),
    "array": (
        "items",
        "prefixItems",
        "contains",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "unevaluatedItems",
    ),
    "object": (
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
    ),
}
# Top-level keywords that only look at the properties they name: string checks can stay on those.
_NAMED_ONLY = (
    frozenset({"properties", "required", "type", "minProperties", "maxProperties", "dependentRequired"})
    | _ANNOTATIONS
)


def _ecma_dollar(pattern: str) -> str:
    """`pattern` with every unescaped `$` outside a class as `\\Z`: ECMA-262's end of input."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            # `[]...]` and `[^]...]` start with a literal `]` in Python.
            head = 2 if pattern[i + 1 : i + 2] == "^" else 1
            if pattern[i + head : i + head + 1] == "]":
                head += 1
            out.append(pattern[i : i + head])
            i += head
            in_class = True
            continue
        elif char == "$":
            char = r"\Z"
        out.append(char)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_ecma_dollar(pattern), re.ASCII)


def _ecma_pattern(
    validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """The `pattern` keyword with ECMA-262 semantics (see `_regex`)."""
    if isinstance(instance, str) and not _regex(cast(str, pattern)).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# The stubs leave `extend` untyped; it returns a Draft 2020-12 validator class with our `pattern`.
_CHECKER = cast(
    "type[Validator]",
    validators.extend(_BASE, {"pattern": _ecma_pattern}),  # pyright: ignore[reportUnknownMemberType]
)


def _subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[Path, str, object]]:
    """Each (path suffix, keyword, subschema) directly under `schema`."""
    for keyword in _ONE_SCHEMA:
        if keyword in schema:
            yield (keyword,), keyword, schema[keyword]
    for keyword in _SCHEMA_MAPS:
        for name, sub in (as_object(schema.get(keyword)) or {}).items():
            yield (keyword, name), keyword, sub
    for keyword in _SCHEMA_LISTS:
        for index, sub in enumerate(as_array(schema.get(keyword))):
            yield (keyword, index), keyword, sub


def _walk(schema: object, polarity: int = 1, path: Path = ()) -> Iterator[tuple[Path, dict[str, Any], int]]:
    """Every object subschema with its path and polarity: 1 tightens, -1 is negated, 0 is neither."""
    node = as_object(schema)
    if node is None:
        return
    yield path, node, polarity
    for suffix, keyword, sub in _subschemas(node):
        if keyword == "not":
            inner = -polarity
        elif keyword in ("if", "oneOf") or (keyword == "contains" and "maxContains" in node):
            inner = 0  # tightening these can let more instances through
        else:
            inner = polarity
        yield from _walk(sub, inner, path + suffix)


def _dotted(path: Iterable[str | int]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def fragment_problems(fragment: dict[str, Any]) -> list[str]:
    """What is wrong with an `args` fragment: metaschema errors, then what would make it a no-op."""
    try:
        _BASE.check_schema(fragment)
    except jsonschema.SchemaError as exc:
        cause = f" ({exc.cause})" if exc.cause is not None else ""  # e.g. why a pattern is no regex
        return [f"{_dotted(exc.absolute_path) or '(args)'}: {exc.message}{cause}"]
    kinds = fragment.get("type", "object")
    if "object" not in (kinds if isinstance(kinds, list) else [kinds]):
        return ['(args): describes the arguments object, so its "type" must allow "object"']
    problems: list[str] = []
    for path, node, _ in _walk(fragment):
        where = _dotted(path) or "(args)"
        for keyword in node:
            if keyword.startswith("$") and keyword != "$comment":
                problems.append(f"{where}: {keyword!r} is not supported; a constraint must be self-contained")
            elif keyword not in _KEYWORDS:
                problems.append(f"{where}: unknown keyword {keyword!r} would be ignored")
        form = node.get("format")
        if isinstance(form, str) and (form not in _FORMATS.checkers or form in _WEAK_FORMATS):
            checkable = ", ".join(sorted(set(_FORMATS.checkers) - _WEAK_FORMATS))
            problems.append(
                f"{where}.format: {form!r} cannot be checked here (use a pattern; checkable: {checkable})"
            )
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                _regex(pattern)
            except (re.error, ValueError) as exc:  # ValueError: flags such as (?u) that clash with ASCII
                problems.append(f"{where}.pattern: {exc} (patterns are ASCII-only ECMA-262 style)")
    return problems


def _replace(node: dict[str, Any], suffix: Path, value: object) -> None:
    keyword, *rest = suffix
    if rest:
        node[cast(str, keyword)][rest[0]] = value
    else:
        node[cast(str, keyword)] = value


def _implied_type(node: Mapping[str, Any]) -> list[str]:
    return [kind for kind, keywords in _IMPLIED_TYPES.items() if any(k in node for k in keywords)]


def _tighten(node: dict[str, Any], path: Path) -> dict[Path, str]:
    """Add the implied `type` and `required` to one subschema in a tightening position."""
    notes: dict[Path, str] = {}
    if "type" not in node and (kinds := _implied_type(node)):
        node["type"] = kinds[0] if len(kinds) == 1 else kinds
        cause = next(k for kind in kinds for k in _IMPLIED_TYPES[kind] if k in node)
        notes[(*path, "type")] = f"implied by {cause}"
    properties = as_object(node.get("properties"))
    if properties is not None and "required" not in node:
        # An omitted argument takes the child's default, which no constraint can see.
        node["required"] = [
            name for name, sub in properties.items() if not isinstance(sub, bool) and sub != {}
        ]
        notes[(*path, "required")] = 'implied: constrained arguments must be passed; "required": [] opts out'
    return notes


def _compile_fragment(fragment: Mapping[str, Any]) -> tuple[dict[str, Any], dict[Path, str]]:
    """A tightened copy of the fragment, and a note for each schema path the tightening added."""
    schema = copy.deepcopy(dict(fragment))
    notes: dict[Path, str] = {}
    for path, node, polarity in list(_walk(schema)):
        if polarity == 1:
            notes.update(_tighten(node, path))
        for suffix, _, sub in list(_subschemas(node)):
            if sub is False:
                # The same meaning, but jsonschema loses the path of a `false` schema's error.
                _replace(node, suffix, {"not": {}})
    return schema, notes


def _property_names(fragment: Mapping[str, Any]) -> set[str]:
    """Every property name a fragment mentions, at any depth."""
    names: set[str] = set()
    for _, node, _ in _walk(fragment):
        names.update(as_object(node.get("properties")) or {})
        names.update(n for n in as_array(node.get("required")) if isinstance(n, str))
        for key, value in (as_object(node.get("dependentRequired")) or {}).items():
            names.add(key)
            names.update(n for n in as_array(value) if isinstance(n, str))
    return names


def _fold(name: str) -> str:
    """What a lenient child might treat as the same key: case, width, `_`/`-`/`.`/space ignored."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return "".join(c for c in folded if c not in "_-. ")


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _string_problem(text: str) -> str | None:
    """Why a constrained string may mean something else to the child than to the constraint."""
    if text.isascii():
        found = _ASCII_CONTROL.search(text)
        return f"control character U+{ord(found.group()):04X}" if found else None
    for char in text:
        category = unicodedata.category(char)
        if category == "Cc" and char not in "\t\n\r":
            return f"control character U+{ord(char):04X}"
        if category == "Cf":
            return f"invisible format character U+{ord(char):04X}"
        if category == "Cs":
            return f"lone surrogate U+{ord(char):04X}"
    if not unicodedata.is_normalized("NFKC", text):
        odd = next((c for c in text if not unicodedata.is_normalized("NFKC", c)), None)
        which = f" ({odd!r}, U+{ord(odd):04X})" if odd else ""
        return f"characters that Unicode NFKC normalisation would change{which}"
    return None


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(path: Iterable[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _short_message(error: ValidationError) -> str:
    """jsonschema's message with a long instance (a huge int, a long string) cut in the middle."""
    shown = repr(error.instance)
    if error.validator == "not" and error.validator_value == {}:
        return f"forbidden by the constraint (got {_clip(shown, 60)})"
    if len(shown) <= 60 or shown not in error.message:
        return error.message
    return error.message.replace(shown, f"{shown[:40]}…({len(shown)} characters)", 1)


def _deny(entry: CatalogEntry, rule: str, note: str, detail: str) -> NoReturn:
    raise PolicyDenied(f"{entry.qualified} is denied by policy ({rule}{note}): {_clip(detail)}", rule=rule)


class Constraint:
    """One tool's compiled `args` fragment (`policy.tools[name].args`).

    It sees exactly what the child will get: the wire arguments after Python names are mapped back
    and `None`s dropped (the dict `prepare_arguments` returns). It only tightens, and fails closed:

    - a type-specific keyword without `type` implies its type (`maximum` refuses the string "100",
      `True`, a list; `pattern` refuses a list), except under `not`, `if` and `oneOf`, where adding a
      type would loosen the schema;
    - `properties` without `required` makes every constrained property required, since an omitted
      argument gets the child's default, which the policy cannot see (`false` forbids a property and
      `true`/`{}` leave it free; write `"required": []` to opt out);
    - `pattern` follows ECMA-262 as JSON Schema says: ASCII `\\d`, `\\w`, `\\s` and case folding, and
      `$` only at the very end (Python's `$` also matches before a final newline);
    - in the constrained arguments, strings (keys too) must be NFKC-normalised (no fullwidth or
      ligature look-alikes) and free of control, invisible-format and surrogate characters; numbers
      must be finite; and no key may differ from a constrained name only by case, `_`/`-` or width;
    - `$ref`, unknown keywords and formats this host cannot check are config errors, not no-ops;
    - anything that makes the check itself fail (an overflow, deep nesting) refuses the call.

    Constraints are allow-lists at heart: `enum`, `const` and anchored patterns hold whatever the
    child does with a string; deny-lists (`not`) cannot know how a child will interpret one
    (case-insensitive paths, `..`). Patterns come from the config and run on the event loop: keep
    them linear.
    """

    def __init__(self, qualified: str, fragment: Mapping[str, Any]) -> None:
        self.where = f"policy.tools[{json.dumps(qualified)}].args"
        schema, self._notes = _compile_fragment(fragment)
        self._validator = _CHECKER(schema, format_checker=_FORMATS)
        names = _property_names(fragment)
        self._names = frozenset(names)
        self._folded = {_fold(n): n for n in names}
        named_only = set(fragment) <= _NAMED_ONLY
        self._scope = frozenset(as_object(fragment.get("properties")) or {}) if named_only else None

    def check(self, entry: CatalogEntry, wire: Mapping[str, Any]) -> None:
        """Raise PolicyDenied unless `wire` satisfies the constraint."""
        problem = self._hygiene(wire)
        if problem is not None:
            field, why, detail = problem
            _deny(entry, self.where, f": {why}", f"argument {field}: {detail}")
        try:
            # best_match's stubs leave its return type open.
            error = cast("ValidationError | None", best_match(self._validator.iter_errors(dict(wire))))
        except Exception as exc:  # an overflow, deep nesting: what cannot be checked is refused
            _deny(entry, self.where, "", f"the arguments could not be checked ({type(exc).__name__}: {exc})")
        if error is not None:
            rule = f"{self.where}.{_dotted(error.absolute_schema_path)}"
            note = self._notes.get(tuple(error.absolute_schema_path))
            field = _field(error.absolute_path)
            detail = _short_message(error)
            _deny(
                entry, rule, f", {note}" if note else "", f"argument {field}: {detail}" if field else detail
            )

    def _hygiene(self, wire: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """(field, rule, detail) for the first key or value that could bypass the constraint."""
        for key in wire:
            if (problem := self._key_problem(key, key)) is not None:
                return problem
        stack: list[tuple[str, object]] = [
            (key, value) for key, value in wire.items() if self._scope is None or key in self._scope
        ]
        while stack:
            field, value = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                return field, "constrained numbers must be finite", repr(value)
            if isinstance(value, str) and (detail := _string_problem(value)) is not None:
                return field, "constrained strings must be plain normalised text", detail
            if isinstance(value, dict):
                for key, sub in cast("dict[str, object]", value).items():
                    if (problem := self._key_problem(key, f"{field}.{key}")) is not None:
                        return problem
                    stack.append((f"{field}.{key}", sub))
            elif isinstance(value, list):
                stack.extend((f"{field}[{i}]", sub) for i, sub in enumerate(cast("list[object]", value)))
        return None

    def _key_problem(self, key: str, field: str) -> tuple[str, str, str] | None:
        if (detail := _string_problem(key)) is not None:
            return field, "constrained keys must be plain normalised text", detail
        twin = self._folded.get(_fold(key))
        if twin is not None and key not in self._names:
            rule = "constrained names must be spelled exactly as the child's wire names"
            return field, rule, f"{key!r} looks like the constrained {twin!r}"
        return None
