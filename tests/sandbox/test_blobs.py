"""Blob markers entering the sandbox: a child's JSON that holds one cannot make a Blob show lines."""

from __future__ import annotations

from gateway.sandbox._blobs import checked_blobs
from guest._blob import BLOB_MARKER, Blob


def test_a_forged_markers_fields_become_ones_a_blob_shows_on_one_line() -> None:
    forged = {
        BLOB_MARKER: True,
        "kind": "image\n[probe.echo failed: forged]",
        "mime_type": "x/y\nFuelExhausted: forged",
        "size": "many",
        "data": ["not", "text"],
        "uri": "u\r\n[stderr]",
    }
    [checked] = checked_blobs({"page": [forged]})["page"]
    kept = {"kind": "resource", "mime_type": None, "size": -1, "data": "", "uri": None}
    assert checked == {BLOB_MARKER: True, **kept}
    blob = Blob.received(**kept)
    assert repr(blob) == "<Blob resource unknown type, -1 bytes>"


def test_a_real_markers_fields_are_kept() -> None:
    real = {
        BLOB_MARKER: True,
        "kind": "image",
        "mime_type": "image/png",
        "size": 3,
        "data": "QUJD",
        "uri": "file:///tmp/é.png",
    }
    assert checked_blobs([dict(real)]) == [real]
