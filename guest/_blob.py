"""Binary tool content (images, audio, binary resources) as small objects, not base64 in output.

Pure Python with no guest-only imports: the host reads BLOB_MARKER from here too.
"""

import base64
from typing import Any, cast

__all__ = ["BLOB_MARKER", "Blob", "kind_of", "revive_blobs"]

BLOB_MARKER = "__codemode_blob__"


class Blob:
    """Binary content: an image, audio or a file. Tools return them; `Blob(data, mime_type=...)` makes
    one; `show(blob)` (or a Blob as the last expression) sends it to the client as MCP content."""

    __slots__ = ("_base64", "kind", "mime_type", "size", "uri")

    def __init__(
        self, data: bytes | bytearray | str, mime_type: str | None = None, *, uri: str | None = None
    ) -> None:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        self._base64 = base64.b64encode(raw).decode()
        self.size = len(raw)
        self.mime_type = mime_type
        self.uri = uri
        self.kind = kind_of(mime_type)

    @classmethod
    def received(cls, kind: str, mime_type: str | None, size: int, data: str, uri: str | None) -> "Blob":
        """A Blob as a tool result carries it: its bytes stay base64 until asked for."""
        blob = cls.__new__(cls)
        blob.kind, blob.mime_type, blob.size, blob._base64, blob.uri = kind, mime_type, size, data, uri
        return blob

    @property
    def data(self) -> bytes:
        """The decoded bytes."""
        return base64.b64decode(self._base64)

    @property
    def base64(self) -> str:
        """The bytes as base64 text, e.g. to pass to another tool."""
        return self._base64

    def shown(self) -> dict[str, Any]:
        """What `show()` sends the host."""
        # By its type, wherever it came from: a resource that is a PNG is shown as an image.
        kind = kind_of(self.mime_type)
        return {"kind": kind, "mime_type": self.mime_type, "data": self._base64, "uri": self.uri}

    def __repr__(self) -> str:
        where = f" {self.uri}" if self.uri else ""
        return f"<Blob {self.kind} {self.mime_type or 'unknown type'}, {self.size} bytes{where}>"


def kind_of(mime_type: str | None) -> str:
    """How MCP carries content of this MIME type: an image, audio, or a resource (any other file)."""
    major = (mime_type or "").partition("/")[0].lower()
    return major if major in ("image", "audio") else "resource"


def revive_blobs(value: Any) -> Any:
    """Replace blob markers in a decoded tool result with Blob objects."""
    if isinstance(value, list):
        return [revive_blobs(item) for item in cast("list[Any]", value)]
    if isinstance(value, dict):
        fields = cast("dict[str, Any]", value)
        if fields.get(BLOB_MARKER) is True:
            uri, mime_type = fields.get("uri"), fields.get("mime_type")
            return Blob.received(
                str(fields.get("kind")),
                None if mime_type is None else str(mime_type),
                int(fields.get("size", -1)),
                str(fields.get("data", "")),
                None if uri is None else str(uri),
            )
        return {key: revive_blobs(item) for key, item in fields.items()}
    return value
