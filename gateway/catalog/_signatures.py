"""Python stubs for child tools, rendered from their JSON Schemas, that the model can call as written.

`git.git_log(*, repo_path: str, max_count: int = 10) -> Any  # Shows the commit logs`, and once the
tool has been called, `-> str  # (observed) Shows the commit logs`: a tool without an output schema
returns what its child sends (JSON text arrives parsed), so its return type is `Any` until the shape
of its results is known (`_shapes.py`).
Parameters are keyword-only because the guest's proxies take keywords only. Untitled objects show
their keys inline, `{'name': str, 'tags': NotRequired[list[str]]}`: not a type, but valid Python
that tells the model what JSON to pass; titled objects and `$ref`s show the name, except the
returned object itself, which the snippet gets as a dict (its keys, not its title).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from gateway.catalog._catalog import CatalogEntry
from gateway.catalog._naming import to_identifier
from gateway.catalog._shapes import MAX_SHAPE_KEYS
from gateway.shared import as_array, as_object, properties_of

__all__ = [
    "FULL",
    "MAX_SIGNATURE_CHARS",
    "OBSERVED",
    "Shape",
    "Style",
    "compact_json",
    "first_sentence",
    "full_doc",
    "render_type",
    "return_type",
    "signature",
    "type_name",
]

MAX_SIGNATURE_CHARS = 200
"""About 50 tokens: the budget of one tool's line in `signatures` mode."""

OBSERVED = "(observed)"
"""What a signature's comment starts with when its return type is the shape of earlier results."""

Shape = dict[str, Any]
"""A JSON Schema of what a tool's calls returned (`_shapes.infer_shape`)."""

_MAX_LITERAL_CHARS = 60  # a longer enum reads better as its base type; `full` still lists it
_MAX_DEFAULT_CHARS = 24  # a longer default is shown as `...`: the tool fills it in anyway
_MAX_SHAPE_KEYS = 8  # an object with more keys reads as `dict`; `full` shows its schema
_MAX_WIDE_SHAPE_KEYS = MAX_SHAPE_KEYS
_MAX_SHAPE_DEPTH = 4
_MIN_SUMMARY_CHARS = 80  # what the comment keeps before types lose detail
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


@dataclass(frozen=True)
class Style:
    """How much of a schema a type shows: Literals for enums, inline `{'key': T}` shapes for objects."""

    literals: bool = True
    shapes: bool = True
    return_shapes: bool = True
    optional: bool = True
    shape_keys: int = _MAX_SHAPE_KEYS


FULL = Style()
_WIDE = Style(shape_keys=_MAX_WIDE_SHAPE_KEYS)
"""A whole doc's: room for every key an observed shape keeps."""
_STYLES = (
    FULL,
    Style(return_shapes=False),
    Style(shapes=False, return_shapes=False),
    Style(literals=False, shapes=False, return_shapes=False),
    Style(literals=False, shapes=False, return_shapes=False, optional=False),
)
"""Tried in turn until a signature fits its budget: the least useful detail goes first."""


def _python_type(value: Any) -> str:
    return (
        "None" if value is None else type(value).__name__ if isinstance(value, str | int | float) else "Any"
    )


def _literal(values: list[Any], style: Style) -> str | None:
    if not values or not all(isinstance(v, str | int | bool) or v is None for v in values):
        return None
    shown = [v for v in values if v is not None]
    text = f"Literal[{', '.join(repr(v) for v in shown)}]" if shown else ""
    if not style.literals or len(text) > _MAX_LITERAL_CHARS:
        return None
    return _union([text, "None"]) if None in values else text


def render_type(schema: object, style: Style = FULL, depth: int = 0) -> str:
    """A JSON Schema as a Python type expression, e.g. `list[str] | None`, `Literal['a', 'b']`."""
    node = as_object(schema)
    if node is None:
        return "Any"
    ref = node.get("$ref")
    if isinstance(ref, str):
        # A local `#/$defs/Name` reads as the def's name; a remote ref is beyond what we render.
        return type_name(ref.rsplit("/", 1)[-1]) if ref.startswith("#/") else "Any"
    values = [node["const"]] if "const" in node else as_array(node.get("enum"))
    if values:
        literal = _literal(values, style)
        if literal:
            return literal
        if "type" not in node:
            return _union([_python_type(v) for v in values])
    options = as_array(node.get("anyOf")) or as_array(node.get("oneOf"))
    if options:
        return _union([render_type(option, style, depth) for option in options])
    all_of = as_array(node.get("allOf"))
    if len(all_of) == 1:
        return render_type(all_of[0], style, depth)
    several = as_array(node.get("type"))
    if several:
        return _union([render_type({**node, "type": kind}, style, depth) for kind in several])
    kinds = node.get("type")
    if kinds is None:
        kinds = "object" if "properties" in node else "array" if "items" in node else None
    if kinds == "array":
        items = node.get("items")
        return f"list[{render_type(items, style, depth + 1)}]" if as_object(items) else "list"
    if kinds == "object":
        return _object_type(node, style, depth)
    return _JSON_TYPES.get(str(kinds), "Any")


def _object_type(node: dict[str, Any], style: Style, depth: int) -> str:
    title = node.get("title")
    if isinstance(title, str) and title.strip():
        return type_name(title)
    properties = properties_of(node)
    if style.shapes and properties and len(properties) <= style.shape_keys and depth < _MAX_SHAPE_DEPTH:
        # The keys the JSON needs, as a dict display: still a Python expression, and the model
        # can build the argument without asking for the full schema.
        required = {str(name) for name in as_array(node.get("required"))}
        keys = [
            f"{name!r}: {_maybe_missing(render_type(sub, style, depth + 1), name in required)}"
            for name, sub in properties.items()
        ]
        return "{" + ", ".join(keys) + "}"
    values = as_object(node.get("additionalProperties"))
    if values and not properties:
        return f"dict[str, {render_type(values, style, depth + 1)}]"
    return "dict"


def _maybe_missing(rendered: str, required: bool) -> str:
    return rendered if required else f"NotRequired[{rendered}]"


def _default_literal(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_DEFAULT_CHARS else "..."


def _parameters(entry: CatalogEntry, style: Style) -> str:
    properties = properties_of(entry.input_schema)
    required = {str(name) for name in as_array(entry.input_schema.get("required"))}
    originals = {original: python for python, original in entry.argument_names.items()}
    mandatory: list[str] = []
    optional: list[str] = []
    for name, schema in properties.items():
        param = f"{originals.get(name, name)}: {render_type(schema, style, 1)}"
        if name in required:
            mandatory.append(param)
        else:
            default = _default_literal(schema["default"]) if "default" in schema else "None"
            optional.append(f"{param} = {default}")
    if optional and not style.optional:
        # The last resort for a huge tool: its required parameters, the rest behind `full` detail.
        optional = ["**options: Any"]
    params = mandatory + optional
    if not params:
        return ""
    return ", ".join(params) if params[0].startswith("**") else f"*, {', '.join(params)}"


def return_type(entry: CatalogEntry, style: Style = FULL, observed: Shape | None = None) -> str:
    """The output schema's shape (else `dict`); else the `observed` shape of what calls returned; else
    `Any` (a text result that is JSON arrives parsed, so nothing narrower holds)."""
    if entry.output_schema is not None:
        # The snippet gets a dict: its keys are what the code needs, where a title (`TimeResult`)
        # reads as a class whose attributes it does not have.
        schema = {key: value for key, value in entry.output_schema.items() if key != "title"}
    elif observed is not None:
        schema = observed
    else:
        return "Any"
    return render_type(schema, replace(style, shapes=style.return_shapes))


def _head(entry: CatalogEntry, style: Style, observed: Shape | None = None) -> str:
    return f"{entry.qualified}({_parameters(entry, style)}) -> {return_type(entry, style, observed)}"


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


def _deprecated(entry: CatalogEntry) -> bool:
    # Servers say so in the title ("Read File (Deprecated)"), which signatures do not otherwise show.
    return "deprecated" in (entry.title or "").lower()


def _is_observed(entry: CatalogEntry, observed: Shape | None) -> bool:
    return entry.output_schema is None and observed is not None


def signature(
    entry: CatalogEntry, max_chars: int = MAX_SIGNATURE_CHARS, observed: Shape | None = None
) -> str:
    """One line: `server.tool(*, params) -> Ret  # first sentence`, at most about `max_chars` long;
    `observed` (the shape of what calls returned) is the return type of a tool without an output
    schema, and the comment then starts with OBSERVED."""
    summary = first_sentence(entry.description)
    if _deprecated(entry) and "deprecated" not in summary.lower():
        summary = f"(deprecated) {summary}"
    if _is_observed(entry, observed):
        summary = f"{OBSERVED} {summary}".rstrip()
    wanted = min(len(summary), _MIN_SUMMARY_CHARS) + 4 if summary else 0
    head = ""
    for style in _STYLES:
        head = _head(entry, style, observed)
        if len(head) + wanted <= max_chars:
            break
    comment = _clip(summary, max_chars - len(head) - 4)
    # A head still over budget (dozens of required parameters) goes out whole: a call cannot be
    # written from half of one.
    return f"{head}  # {comment}" if comment else head


def _clean_schema(node: object) -> object:
    schema = as_object(node)
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
            value = [_clean_schema(v) for v in as_array(value)]
        elif key in _SCHEMA_MAPS and as_object(value) is not None:
            value = {k: _clean_schema(v) for k, v in (as_object(value) or {}).items()}
        cleaned[key] = value
    return cleaned


def compact_json(schema: object) -> str:
    """A schema as one line of JSON without `$schema`, the root's title or scalar titles."""
    cleaned = _clean_schema(schema)
    root = as_object(cleaned)
    if root is not None:
        # The root's title names the arguments model ("logArguments"): nothing a caller uses.
        root.pop("title", None)
    return json.dumps(cleaned, separators=(",", ":"), ensure_ascii=False)


def full_doc(entry: CatalogEntry, observed: Shape | None = None) -> str:
    """The untruncated signature, hints, whole description, input schema and output schema if any."""
    lines = [_head(entry, _WIDE, observed)]
    flags = (
        ("observed return type (not declared)", _is_observed(entry, observed)),
        ("deprecated", _deprecated(entry)),
        ("read-only", entry.read_only),
        ("destructive", entry.destructive),
    )
    hints = [hint for hint, flag in flags if flag]
    if hints:
        lines.append("  " + ", ".join(hints))
    lines.extend("  " + line for line in entry.description.splitlines() if line.strip())
    lines.append(f"  input: {compact_json(entry.input_schema)}")
    if entry.output_schema is not None:
        lines.append(f"  output: {compact_json(entry.output_schema)}")
    return "\n".join(lines)
