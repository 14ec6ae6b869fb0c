"""Binary tool content (images, audio, binary resources) as small objects, not base64 in output.

Pure Python with no guest-only imports: the host reads BLOB_MARKER from here too.
"""

import base64
from typing import Any, cast

__all__ = ["BLOB_MARKER", "Blob", "revive_blobs"]

BLOB_MARKER = "__codemode_blob__"


class Blob:
    """Binary content from a tool: kind, mime type and size up front, the bytes on demand."""

    __slots__ = ("_base64", "kind", "mime_type", "size", "uri")

    def __init__(
        self, kind: str, mime_type: str | None, size: int, data: str, uri: str | None = None
    ) -> None:
        self.kind = kind
        self.mime_type = mime_type
        self.size = size
        self.uri = uri
        self._base64 = data

    @property
    def data(self) -> bytes:
        """The decoded bytes."""
        return base64.b64decode(self._base64)

    @property
    def base64(self) -> str:
        """The bytes as base64 text, e.g. to pass to another tool."""
        return self._base64

    def __repr__(self) -> str:
        where = f" {self.uri}" if self.uri else ""
        return f"<Blob {self.kind} {self.mime_type or 'unknown type'}, {self.size} bytes{where}>"


def revive_blobs(value: Any) -> Any:
    """Replace blob markers in a decoded tool result with Blob objects."""
    if isinstance(value, list):
        return [revive_blobs(item) for item in cast("list[Any]", value)]
    if isinstance(value, dict):
        fields = cast("dict[str, Any]", value)
        if fields.get(BLOB_MARKER) is True:
            uri, mime_type = fields.get("uri"), fields.get("mime_type")
            return Blob(
                str(fields.get("kind")),
                None if mime_type is None else str(mime_type),
                int(fields.get("size", -1)),
                str(fields.get("data", "")),
                None if uri is None else str(uri),
            )
        return {key: revive_blobs(item) for key, item in fields.items()}
    return value
