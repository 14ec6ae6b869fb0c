"""Argument constraints: `policy.tools[name].args` JSON Schema fragments, compiled to fail closed.

A fragment is checked against the metaschema and for anything that would silently be a no-op, then
tightened (implied `type` and `required`) and run on the final wire arguments by a validator whose
cost is linear in them (`gateway.shared.json_schema`: ECMA-262 patterns on RE2, hashed `uniqueItems`),
after a hygiene pass that refuses look-alike keys and strings and paths that are not normalised
(see `Constraint`).
"""

from __future__ import annotations

import copy
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn, cast

import jsonschema
from jsonschema.exceptions import ValidationError

from gateway.catalog import CatalogEntry
from gateway.errors import PolicyDenied
from gateway.policy._uris import disguised_escape
from gateway.shared import as_array, as_object
from gateway.shared.json_schema import (
    UnsupportedPattern,
    best_error,
    ecma_regex,
    linear_validator,
    short_message,
)

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
        patterns = [(("pattern",), node.get("pattern"))]
        patterns += [
            (("patternProperties", key), key) for key in as_object(node.get("patternProperties")) or {}
        ]
        for suffix, pattern in patterns:
            if isinstance(pattern, str) and (why := _pattern_problem(pattern)) is not None:
                problems.append(f"{_dotted(path + suffix)}: {pattern!r} cannot be used: {why}")
    return problems


def _pattern_problem(pattern: str) -> str | None:
    """Why a pattern cannot run on the linear-time engine (backreferences, lookaround), or None."""
    try:
        ecma_regex(pattern)
    except UnsupportedPattern as exc:
        return f"{exc} (patterns are ECMA-262, run by RE2 in linear time)"
    return None


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
# What a child may decode before it splits a path: `%25` runs (double encoding) to `%`, then
# separators (`%2f`, `%5c`, IIS's `%u002f`, overlong UTF-8) and dots (`%2e`, `%u002e`, `%c0%ae`).
_PERCENT_RUN = re.compile(r"%(?:25)+", re.IGNORECASE)
_ENCODED_SEPARATOR = re.compile(r"%2f|%5c|%u002f|%u005c|%c0%af|%c1%9c|%e0%80%af", re.IGNORECASE)
_ENCODED_DOT = re.compile(r"%2e|%u002e|%c0%ae|%e0%80%ae", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_SEPARATOR = re.compile(r"[/\\]")
_DOUBLE_SEPARATOR = re.compile(r"[/\\]{2}")
# Where a URL path segment ends for its reader: path parameters (Tomcat's `..;/`), query, fragment.
_SEGMENT_END = re.compile(r"[;?#]")


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


def _path_problem(text: str) -> str | None:
    """Why a constrained string is not a normalised path: a `.` or `..` segment, or an empty one."""
    if "." not in text and "/" not in text and "\\" not in text and "%" not in text:
        return None
    plain = text
    if "%" in text:
        plain = _ENCODED_DOT.sub(".", _ENCODED_SEPARATOR.sub("/", _PERCENT_RUN.sub("%", text)))
    encoded = ", once percent-decoded" if plain != text else ""
    # A URL's `scheme://` opens its authority: the `//` there is no empty path segment.
    scheme = _SCHEME.match(plain)
    path = plain[scheme.end() :] if scheme is not None else plain
    for segment in _SEPARATOR.split(path):
        name = _SEGMENT_END.split(segment, maxsplit=1)[0] if segment[:1] == "." else segment
        if name in (".", ".."):
            shown = f"{name!r} segment" if name == segment else f"{name!r} segment ({segment!r})"
            return f"a {shown}{encoded}"
    double = _DOUBLE_SEPARATOR.search(path, 1)  # a leading `//` names a host (UNC, protocol-relative)
    if double is not None:
        return f"an empty segment ({double.group()!r}){encoded}"
    if "%" in text and (escape := disguised_escape(text)) is not None:
        return f"{escape}, which a child decodes: write the character itself"
    return None


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(path: Iterable[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _short_message(error: ValidationError) -> str:
    """jsonschema's message with a long instance (a huge int, a long string) cut in the middle."""
    if error.validator == "not" and error.validator_value == {}:
        return f"forbidden by the constraint (got {_clip(repr(error.instance), 60)})"
    return short_message(error)


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
    - `pattern` follows ECMA-262 as JSON Schema says (`gateway.shared.json_schema` has the details): `.`
      matches no line terminator (`\\n`, `\\r`, U+2028, U+2029), `^` and `$` only the ends of the
      input (Python's `$` also matches before a final newline), `\\d` and `\\w` are ASCII;
    - patterns run on RE2 and `uniqueItems` by hashing, so a check costs time linear in the
      arguments, however they are built; a pattern RE2 cannot run (a backreference, a lookaround)
      is a config error that names it;
    - in the constrained arguments, strings (keys too) must be NFKC-normalised (no fullwidth or
      ligature look-alikes) and free of control, invisible-format and surrogate characters; numbers
      must be finite; and no key may differ from a constrained name only by case, `_`/`-` or width;
    - constrained strings (keys too) must be normalised paths: no `.` or `..` segment between `/`
      or `\\` separators, percent-encoded or not (`%2e%2e`, `%252e`, `..%2f`), no empty segment
      from a `//` after the first character (a URL's `scheme://` is not one), and no percent-escape
      of a letter, digit or `-._~` (`/srv/%73ecrets` is `/srv/secrets` to a child, not to a `not`);
    - `$ref`, unknown keywords and formats this host cannot check are config errors, not no-ops;
    - anything that makes the check itself fail (an overflow, deep nesting) refuses the call.

    Constraints are allow-lists at heart: `enum`, `const` and anchored patterns hold whatever the
    child does with a string, normalised paths included (`^/srv/safe/.*$` cannot reach
    `/srv/safe/../private`); deny-lists (`not`) cannot know how a child will interpret one
    (case-insensitive paths, say).
    """

    def __init__(self, qualified: str, fragment: Mapping[str, Any]) -> None:
        self.where = f"policy.tools[{json.dumps(qualified)}].args"
        schema, self._notes = _compile_fragment(fragment)
        self._validator = linear_validator(schema, skip_unrunnable_patterns=False, format_checker=_FORMATS)
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
            error = best_error(self._validator.iter_errors(dict(wire)))
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
            if isinstance(value, str):
                if (detail := _string_problem(value)) is not None:
                    return field, "constrained strings must be plain normalised text", detail
                if (detail := _path_problem(value)) is not None:
                    return field, "constrained strings must be normalised paths", detail
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
        if (detail := _path_problem(key)) is not None:
            return field, "constrained keys must be normalised paths", detail
        twin = self._folded.get(_fold(key))
        if twin is not None and key not in self._names:
            rule = "constrained names must be spelled exactly as the child's wire names"
            return field, rule, f"{key!r} looks like the constrained {twin!r}"
        return None
