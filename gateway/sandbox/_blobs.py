"""Blob markers in what enters the sandbox, made harmless: a child's JSON can hold the marker too."""

from __future__ import annotations

import re
from typing import Any, cast

from guest._blob import BLOB_MARKER

__all__ = ["MIME_TYPE", "checked_blobs"]

MIME_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")
"""A MIME type as the gateway accepts one (compared in lower case)."""
_KINDS = ("image", "audio", "resource")
_MAX_URI_CHARS = 2_048


def checked_blobs(value: Any) -> Any:
    """`value` with each blob marker's fields made ones the guest's `Blob` takes as they are.

    The guest turns any object holding the marker into a `Blob`, whose repr shows its kind, MIME type,
    size and uri: a child's text there (a newline, a bidi control) would start lines of its own in the
    result the model reads, and a size that is not a number would fail the call with a ValueError."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(cast("list[Any]", item))
        elif isinstance(item, dict):
            fields = cast("dict[str, Any]", item)
            if fields.get(BLOB_MARKER) is True:
                _check_marker(fields)
            else:
                todo.extend(fields.values())
    return value


def _check_marker(fields: dict[str, Any]) -> None:
    mime_type, uri, size, data = (fields.get(key) for key in ("mime_type", "uri", "size", "data"))
    if not isinstance(mime_type, str) or not MIME_TYPE.fullmatch(mime_type.lower()):
        fields["mime_type"] = None
    if fields.get("kind") not in _KINDS:
        fields["kind"] = "resource"
    if not isinstance(data, str):
        fields["data"] = ""
    if not isinstance(size, int) or isinstance(size, bool):
        fields["size"] = -1
    if uri is not None and (not isinstance(uri, str) or len(uri) > _MAX_URI_CHARS or not uri.isprintable()):
        fields["uri"] = None
