"""Python stubs for child tools, rendered from their JSON Schemas, that the model can call as written.

`memory.create_entities(*, entities: list[dict]) -> dict  # Create multiple new entities ...`
Parameters are keyword-only because the guest's proxies take keywords only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gateway._catalog import CatalogEntry, as_list, as_schema, properties_of
from gateway._naming import to_identifier

__all__ = ["MAX_SIGNATURE_CHARS", "first_sentence", "full_doc", "render_type", "signature", "type_name"]

MAX_SIGNATURE_CHARS = 400
"""About 100 tokens: the budget of one tool's line in `signatures` mode."""

_MAX_LITERAL_CHARS = 60  # a longer enum reads better as its base type; `full` still lists it
_MAX_DEFAULT_CHARS = 24  # a longer default is shown as `...`: the tool fills it in anyway
_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n\s*\n")
_SCHEMA_KEYS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")


def type_name(title: str) -> str:
    """A schema title as a class-like name: "Time Result" -> TimeResult."""
    words = re.findall(r"[A-Za-z0-9]+", title)
    return to_identifier("".join(w[:1].upper() + w[1:] for w in words), fallback="dict")


def _union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    if "Any" in unique:
        return "Any"
    # `None` last reads as Python's Optional: `str | None`.
    unique.sort(key=lambda m: m == "None")
    return " | ".join(unique) or "Any"


def _literal(values: list[Any], simple: bool) -> str | None:
    if not values or not all(isinstance(v, str | int | bool) or v is None for v in values):
        return None
    shown = [v for v in values if v is not None]
    text = f"Literal[{', '.join(repr(v) for v in shown)}]" if shown else ""
    if simple or len(text) > _MAX_LITERAL_CHARS:
        return None
    return _union([text, "None"]) if None in values else text


def render_type(schema: object, simple: bool = False) -> str:
    """A JSON Schema as a Python type expression; `simple` drops Literals to keep signatures short."""
    node = as_schema(schema)
    if node is None:
        return "Any"
    ref = node.get("$ref")
    if isinstance(ref, str):
        # A local `#/$defs/Name` reads as the def's name; a remote ref is beyond what we render.
        return type_name(ref.rsplit("/", 1)[-1]) if ref.startswith("#/") else "Any"
    if "const" in node:
        rendered = _literal([node["const"]], simple)
        if rendered:
            return rendered
    enum = _literal(as_list(node.get("enum")), simple)
    if enum:
        return enum
    options = as_list(node.get("anyOf")) or as_list(node.get("oneOf"))
    if options:
        return _union([render_type(option, simple) for option in options])
    all_of = as_list(node.get("allOf"))
    if len(all_of) == 1:
        return render_type(all_of[0], simple)
    kinds = node.get("type")
    if isinstance(kinds, list):
        return _union([render_type({**node, "type": kind}, simple) for kind in as_list(kinds)])
    if kinds is None:
        kinds = "object" if "properties" in node else "array" if "items" in node else None
    if kinds == "array":
        items = node.get("items")
        return f"list[{render_type(items, simple)}]" if as_schema(items) else "list"
    if kinds == "object":
        return _object_type(node, simple)
    return _JSON_TYPES.get(str(kinds), "Any")


def _object_type(node: dict[str, Any], simple: bool) -> str:
    title = node.get("title")
    if isinstance(title, str) and title.strip():
        return type_name(title)
    values = as_schema(node.get("additionalProperties"))
    if values and not node.get("properties"):
        return f"dict[str, {render_type(values, simple)}]"
    return "dict"


def _default_literal(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_DEFAULT_CHARS else "..."


def _parameters(entry: CatalogEntry, simple: bool) -> str:
    properties = properties_of(entry.input_schema)
    required = {str(name) for name in as_list(entry.input_schema.get("required"))}
    originals = {original: python for python, original in entry.argument_names.items()}
    mandatory: list[str] = []
    optional: list[str] = []
    for name, schema in properties.items():
        param = f"{originals.get(name, name)}: {render_type(schema, simple)}"
        if name in required:
            mandatory.append(param)
        else:
            default = _default_literal(schema["default"]) if "default" in schema else "None"
            optional.append(f"{param} = {default}")
    params = mandatory + optional
    return f"*, {', '.join(params)}" if params else ""


def return_type(entry: CatalogEntry, simple: bool = False) -> str:
    """The output schema's type (its title, else `dict`), else `Any`."""
    return render_type(entry.output_schema, simple) if entry.output_schema is not None else "Any"


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (abbreviations like "e.g." do not end one), on one line."""
    start = 0
    while match := _SENTENCE_END.search(text, start):
        if not _ABBREVIATION.search(text[: match.end()]):
            text = text[: match.end()]
            break
        start = match.end()
    return " ".join(text.split())


def _clip(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    if room < 8:
        return ""
    cut = text[: room - 3].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + "..."


def signature(entry: CatalogEntry, max_chars: int = MAX_SIGNATURE_CHARS) -> str:
    """One line: `server.tool(*, params) -> Ret  # first sentence`, at most about `max_chars` long."""
    head = ""
    for simple in (False, True):
        head = f"{entry.qualified}({_parameters(entry, simple)}) -> {return_type(entry, simple)}"
        if len(head) <= max_chars:
            break
    summary = first_sentence(entry.description)
    if entry.title and "deprecated" in entry.title.lower() and "deprecated" not in summary.lower():
        summary = f"(deprecated) {summary}"
    comment = _clip(summary, max_chars - len(head) - 4)
    # A head longer than the budget still goes out whole: a call cannot be written from half of one.
    return f"{head}  # {comment}" if comment else head


def _clean_schema(node: object) -> object:
    schema = as_schema(node)
    if schema is None:
        return node
    is_object = schema.get("type") == "object" or "properties" in schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        # `$schema` and the titles pydantic puts on every scalar are noise in a model's context.
        if key == "$schema" or (key == "title" and not is_object):
            continue
        if key in _SCHEMA_KEYS:
            value = _clean_schema(value)
        elif key in _SCHEMA_LISTS:
            value = [_clean_schema(v) for v in as_list(value)]
        elif key in _SCHEMA_MAPS and as_schema(value) is not None:
            value = {k: _clean_schema(v) for k, v in (as_schema(value) or {}).items()}
        cleaned[key] = value
    return cleaned


def compact_json(schema: object) -> str:
    """A schema as one line of JSON without `$schema` or scalar titles."""
    return json.dumps(_clean_schema(schema), separators=(",", ":"), ensure_ascii=False)


def full_doc(entry: CatalogEntry) -> str:
    """The untruncated signature, hints, whole description, input schema and output schema if any."""
    lines = [f"{entry.qualified}({_parameters(entry, False)}) -> {return_type(entry)}"]
    hints = [
        hint
        for hint, flag in (("read-only", entry.read_only), ("destructive", entry.destructive))
        if flag
    ]
    if entry.title:
        hints.insert(0, f'"{entry.title}"')
    if hints:
        lines.append("  " + ", ".join(hints))
    lines.extend("  " + line for line in entry.description.splitlines() if line.strip())
    lines.append(f"  input: {compact_json(entry.input_schema)}")
    if entry.output_schema is not None:
        lines.append(f"  output: {compact_json(entry.output_schema)}")
    return "\n".join(lines)
