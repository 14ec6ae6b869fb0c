"""Result shapes learned from use: what a tool without an output schema has returned, as a schema.

Most children declare no output schema, so a model would call a tool once only to see what comes
back. The gateway sees every result: it keeps the shape of a tool's values (types and keys, never a
value) as a small JSON Schema, which signatures render as they render an output schema, marked as
observed. Keys that are data (not identifier-like, or too many) fold into `dict[str, ...]`, so that
a signature stays a type, not a record of what came back.

Shapes live in a `ShapeStore` keyed by server, tool and a digest of the tool's schemas (a tool
whose schema changes starts with no shape), and by caller where callers are authenticated: an
identifier-like key can still be data (a user's name), so one caller's results never shape the
signatures another caller reads.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol, cast

from guest._blob import BLOB_MARKER

if TYPE_CHECKING:
    from gateway.catalog._catalog import CatalogEntry

__all__ = [
    "MAX_SHAPE_KEYS",
    "MemoryShapeStore",
    "ObservedShapes",
    "ShapeStore",
    "infer_shape",
    "merge_shapes",
    "shape_key",
]

log = logging.getLogger("gateway.catalog.shapes")

MAX_SHAPE_KEYS = 16
"""An object with more keys than this is a mapping of data (`dict[str, ...]`), not a record."""

_MAX_DEPTH = 4  # deeper containers show as `dict` / `list`
_MAX_NODES = 32  # a shape's keys and containers: past it, containers show as `dict` / `list`
_MAX_ITEMS = 5  # a list's element shape is merged over its first items
_MAX_UNION = 4  # more alternatives than this read as `Any`
_MAX_ENTRIES = 4096  # shapes a process keeps, least recently used dropped first
# A key that names a field: letters, digits, `_ - $ @`, starting with a letter (or `_ $ @`), short,
# with few digits. Anything else (a path, a date, an id, an e-mail, a sentence) is data.
_IDENTIFIER = re.compile(r"[A-Za-z_$@][A-Za-z0-9_$@-]{0,31}")
_MAX_KEY_DIGITS = 3
_SCALARS: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
_BLOB: dict[str, Any] = {"type": "object", "title": "Blob"}


class ShapeStore(Protocol):
    """Where observed shapes are kept: this process's memory, or a store replicas share.

    Both calls are made on the event loop and on worker threads and must return at once: a store
    over the network answers from a local copy and writes behind."""

    def get(self, key: str) -> str | None:
        """The shape kept under `key` (JSON), if any."""
        ...

    def put(self, key: str, shape: str) -> None:
        """Keep `shape` (JSON) under `key`, replacing any."""
        ...


class MemoryShapeStore:
    """Shapes kept in this process, the least recently used dropped past `max_entries`."""

    def __init__(self, max_entries: int = _MAX_ENTRIES) -> None:
        self._max_entries = max_entries
        self._shapes: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            shape = self._shapes.get(key)
            if shape is not None:
                self._shapes.move_to_end(key)
            return shape

    def put(self, key: str, shape: str) -> None:
        with self._lock:
            self._shapes[key] = shape
            self._shapes.move_to_end(key)
            while len(self._shapes) > self._max_entries:
                self._shapes.popitem(last=False)

    def __len__(self) -> int:
        return len(self._shapes)


# (server, tool, id(input schema), id(output schema)) -> (those schemas, the key): every call observes
# its result, and the digest's JSON dump of the schemas would cost more than the rest of `observe`.
# Holding the schemas keeps their ids from being reused; the entries of a catalog and their copies for
# each policy share them, and a rebuilt catalog simply adds keys, the whole cache dropped past its bound.
_keys: dict[tuple[str, str, int, int], tuple[object, object, str]] = {}


def shape_key(entry: CatalogEntry) -> str:
    """The store's key for `entry`: its server and tool names, and a digest of its schemas."""
    ids = (entry.server_name, entry.tool_name, id(entry.input_schema), id(entry.output_schema))
    cached = _keys.get(ids)
    if cached is not None and cached[0] is entry.input_schema and cached[1] is entry.output_schema:
        return cached[2]
    if len(_keys) >= _MAX_ENTRIES:
        _keys.clear()
    key = _digested_key(entry)
    _keys[ids] = (entry.input_schema, entry.output_schema, key)
    return key


def _digested_key(entry: CatalogEntry) -> str:
    schemas = json.dumps([entry.input_schema, entry.output_schema], sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(schemas.encode()).hexdigest()[:16]
    return json.dumps([entry.server_name, entry.tool_name, digest], separators=(",", ":"))


class _Budget:
    """How many more schema nodes a shape may have."""

    def __init__(self) -> None:
        self.left = _MAX_NODES

    def take(self, nodes: int = 1) -> bool:
        """Whether `nodes` more fit; they are counted only if they do."""
        if nodes > self.left:
            return False
        self.left -= nodes
        return True


def infer_shape(value: Any) -> dict[str, Any]:
    """A JSON Schema of `value`'s shape: types and identifier-like keys, never a value; bounded."""
    return _infer(value, 0, _Budget())


def _infer(value: object, depth: int, budget: _Budget) -> dict[str, Any]:
    if value is None:
        return {"type": "null"}
    scalar = _SCALARS.get(type(value))
    if scalar is not None:
        return {"type": scalar}
    if isinstance(value, list):
        items = cast("list[Any]", value)
        if not items or depth >= _MAX_DEPTH or not budget.take():
            return {"type": "array"}
        shape = _infer(items[0], depth + 1, budget)
        for item in itertools.islice(items, 1, _MAX_ITEMS):
            shape = merge_shapes(shape, _infer(item, depth + 1, budget))
        return {"type": "array", "items": shape}
    if isinstance(value, dict):
        return _infer_object(cast("dict[Any, Any]", value), depth, budget)
    return {}


def _infer_object(value: dict[Any, Any], depth: int, budget: _Budget) -> dict[str, Any]:
    if value.get(BLOB_MARKER) is True:
        return dict(_BLOB)
    if not value or depth >= _MAX_DEPTH:
        return {"type": "object"}
    if not _is_record(value):
        if not budget.take():
            return {"type": "object"}
        # Keys that are data: only the values' shape is kept, merged over the first few.
        values = [_infer(v, depth + 1, budget) for v in itertools.islice(value.values(), _MAX_ITEMS)]
        return {"type": "object", "additionalProperties": _merge_all(values)}
    if not budget.take(len(value)):
        return {"type": "object"}
    properties = {key: _infer(v, depth + 1, budget) for key, v in value.items()}
    return {"type": "object", "properties": properties, "required": list(properties)}


def _is_record(value: dict[Any, Any]) -> bool:
    return len(value) <= MAX_SHAPE_KEYS and all(_identifier_like(key) for key in value)


def _identifier_like(key: Any) -> bool:
    return (
        isinstance(key, str)
        and _IDENTIFIER.fullmatch(key) is not None
        and sum(c.isdigit() for c in key) <= _MAX_KEY_DIGITS
    )


def _merge_all(shapes: list[dict[str, Any]]) -> dict[str, Any]:
    merged = shapes[0] if shapes else {}
    for shape in shapes[1:]:
        merged = merge_shapes(merged, shape)
    return merged


def _kind(shape: dict[str, Any]) -> str:
    if shape.get("title") == _BLOB["title"]:
        return "blob"
    kind = shape.get("type")
    return kind if isinstance(kind, str) else "any"


def _members(shape: dict[str, Any]) -> list[dict[str, Any]]:
    options = shape.get("anyOf")
    return cast("list[dict[str, Any]]", options) if isinstance(options, list) else [shape]


def merge_shapes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One shape that both `a` and `b` fit: alike kinds merged, others a union (`int | None`)."""
    if a == b:
        return a
    members: list[dict[str, Any]] = []
    for shape in [*_members(a), *_members(b)]:
        kind = _kind(shape)
        if kind == "any":
            return {}
        same = next((i for i, m in enumerate(members) if _mergeable(_kind(m), kind)), None)
        if same is None:
            members.append(shape)
        else:
            members[same] = _merge_alike(members[same], shape)
    if len(members) > _MAX_UNION:
        return {}
    return members[0] if len(members) == 1 else {"anyOf": members}


def _mergeable(a: str, b: str) -> bool:
    return a == b or {a, b} == {"integer", "number"}


def _merge_alike(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    kind = _kind(a)
    if kind in ("integer", "number"):
        return a if _kind(b) == kind else {"type": "number"}  # an int passes where a float is taken
    if kind == "array":
        if "items" not in a or "items" not in b:
            return a if "items" in a else b
        return {"type": "array", "items": merge_shapes(a["items"], b["items"])}
    if kind == "object":
        return _merge_objects(a, b)
    return a


def _merge_objects(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if "properties" not in a and "additionalProperties" not in a:
        return b  # an empty object says nothing about the keys
    if "properties" not in b and "additionalProperties" not in b:
        return a
    a_props = cast("dict[str, Any]", a.get("properties", {}))
    b_props = cast("dict[str, Any]", b.get("properties", {}))
    keys = list(dict.fromkeys([*a_props, *b_props]))
    if "additionalProperties" in a or "additionalProperties" in b or len(keys) > MAX_SHAPE_KEYS:
        values = [*a_props.values(), *b_props.values()]
        values += [s["additionalProperties"] for s in (a, b) if "additionalProperties" in s]
        return {"type": "object", "additionalProperties": _merge_all(values)}
    properties = {
        key: merge_shapes(a_props[key], b_props[key])
        if key in a_props and key in b_props
        else a_props[key]
        if key in a_props
        else b_props[key]  # `{}` (any) is a shape too, and falsy
        for key in keys
    }
    required = set(cast("list[str]", a.get("required", []))) & set(cast("list[str]", b.get("required", [])))
    return {"type": "object", "properties": properties, "required": [k for k in keys if k in required]}


def _size(shape: dict[str, Any]) -> int:
    """The keys and containers in a shape, as `_Budget` counts them."""
    size = 0
    todo = [shape]
    while todo:
        node = todo.pop()
        properties = node.get("properties")
        if isinstance(properties, dict):
            size += len(cast("dict[str, Any]", properties))
            todo.extend(cast("dict[str, dict[str, Any]]", properties).values())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                size += 1
                todo.append(node[key])
        todo.extend(_members(node) if "anyOf" in node else [])
    return size


class ObservedShapes:
    """The shapes of the values tools without an output schema returned, in a `ShapeStore`: one set
    for the gateway's one caller (stdio, or HTTP without `auth`), or one per authenticated caller."""

    def __init__(self, store: ShapeStore | None = None, caller: str | None = None) -> None:
        self.store: ShapeStore = store if store is not None else MemoryShapeStore()
        # Keys carry a digest of the caller, so a store shared by replicas names no principal.
        self._caller = hashlib.sha256(caller.encode()).hexdigest()[:16] if caller is not None else None

    def for_caller(self, caller: str) -> ObservedShapes:
        """The shapes `caller` has taught, in the same store: what its own calls returned, and nothing
        another caller's did (field names can be data: user names, say)."""
        return ObservedShapes(self.store, caller)

    def _key(self, entry: CatalogEntry) -> str:
        key = shape_key(entry)
        return key if self._caller is None else f'{key[:-1]},"{self._caller}"]'

    def observe(self, entry: CatalogEntry, value: Any) -> None:
        """Merge the shape of `value`, which a call of `entry` returned, into the one kept for it; a
        shape is a hint, so failing to learn one is logged and never fails the call."""
        if entry.output_schema is not None:
            return  # the declared schema says it better
        try:
            self._learn(entry, value)
        except Exception:
            log.warning(
                "a result's shape could not be learned", extra={"tool": entry.qualified}, exc_info=True
            )

    def _learn(self, entry: CatalogEntry, value: Any) -> None:
        key = self._key(entry)
        kept = self._load(key)
        shape = infer_shape(value)
        merged = merge_shapes(kept, shape) if kept is not None else shape
        if _size(merged) > _MAX_NODES:
            merged = shape  # shapes that differ call after call: the latest says most
        if merged != kept:
            self.store.put(key, json.dumps(merged, separators=(",", ":")))

    def shape_of(self, entry: CatalogEntry) -> dict[str, Any] | None:
        """The shape of what `entry` returned so far, once it has been called; None for a tool with
        an output schema."""
        if entry.output_schema is not None:
            return None
        return self._load(self._key(entry))

    def _load(self, key: str) -> dict[str, Any] | None:
        text = self.store.get(key)
        if text is None or len(text) > _MAX_STORED_CHARS:
            return None
        try:
            shape = json.loads(text)
        except (ValueError, RecursionError):
            return None  # a shared store's garbage is no shape
        return cast("dict[str, Any]", shape) if _well_formed(shape) else None


_MAX_STORED_CHARS = 65_536  # a shape of _MAX_NODES nodes is a few KB
_SHAPE_KEYS = frozenset({"type", "title", "items", "properties", "required", "additionalProperties", "anyOf"})
_KINDS = frozenset({*_SCALARS.values(), "null", "array", "object"})


def _well_formed(shape: object) -> bool:
    """Whether `shape` is one `infer_shape` and `merge_shapes` could have made, and small: a shared store
    may hold anything, and merging or rendering what it holds must neither fail nor loop."""
    todo: list[tuple[object, int]] = [(shape, 0)]
    visited = 0
    while todo:
        node, depth = todo.pop()
        visited += 1
        if not isinstance(node, dict) or depth > 4 * _MAX_DEPTH or visited > 8 * _MAX_NODES:
            return False
        node = cast("dict[str, Any]", node)
        kind, title = node.get("type", "object"), node.get("title", "")
        if not node.keys() <= _SHAPE_KEYS or not isinstance(kind, str) or kind not in _KINDS:
            return False
        if not isinstance(title, str):
            return False
        required, properties = node.get("required", []), node.get("properties", {})
        if not isinstance(required, list) or not all(isinstance(k, str) for k in required):  # pyright: ignore[reportUnknownVariableType]
            return False
        if not isinstance(properties, dict):
            return False
        children: list[object] = list(cast("dict[str, Any]", properties).values())
        children += [node[key] for key in ("items", "additionalProperties") if key in node]
        if "anyOf" in node:
            options = node["anyOf"]
            if not isinstance(options, list) or not options or len(options) > _MAX_UNION:  # pyright: ignore[reportUnknownArgumentType]
                return False
            children += cast("list[object]", options)
        todo += [(child, depth + 1) for child in children]
    return True
