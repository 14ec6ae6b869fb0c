"""A child's CallToolResult as the value a snippet receives: JSON, text, lists, blob markers, errors."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp import types

from gateway.catalog._results import resource_contents_value, tool_result_value
from gateway.errors import ToolCallError
from guest._blob import BLOB_MARKER

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content: types.ContentBlock, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured)


def test_structured_content_wins_over_the_text_blocks() -> None:
    value = tool_result_value(result(text('{"shown": "to humans"}'), structured={"rows": [1, 2]}))
    assert value == {"rows": [1, 2]}


@pytest.mark.parametrize(
    ("given", "value"),
    [
        ('{"a": [1, null]}', {"a": [1, None]}),
        ("  [1, 2]\n", [1, 2]),
        ("42", 42),
        ("-3.5e2", -350.0),
        ("true", True),
        ("null", None),
        ('"quoted"', "quoted"),
        ("hello world", "hello world"),
        ("{not json", "{not json"),
        ("[1, 2] and more", "[1, 2] and more"),
        ("1_000", "1_000"),
        ("", ""),
    ],
)
def test_text_is_parsed_as_json_only_when_it_is_json(given: str, value: Any) -> None:
    assert tool_result_value(result(text(given))) == value


def test_text_that_is_not_json_keeps_its_whitespace() -> None:
    assert tool_result_value(result(text("  line one\n"))) == "  line one\n"


@pytest.mark.parametrize("given", ["NaN", "Infinity", "-Infinity", '{"a": NaN}', "[1, -Infinity]"])
def test_text_that_only_python_reads_as_a_number_stays_text(given: str) -> None:
    assert tool_result_value(result(text(given))) == given


def test_several_blocks_become_a_list_in_order_and_no_blocks_become_none() -> None:
    assert tool_result_value(result(text("first"), text('{"n": 2}'), text("3"))) == ["first", {"n": 2}, 3]
    assert tool_result_value(result()) is None


def test_an_image_becomes_a_blob_marker_with_its_decoded_size() -> None:
    value = tool_result_value(result(types.ImageContent(type="image", data=PNG, mime_type="image/png")))
    assert value == {BLOB_MARKER: True, "kind": "image", "mime_type": "image/png", "size": 32, "data": PNG}


def test_audio_and_a_binary_resource_become_blob_markers_and_bad_base64_has_size_minus_one() -> None:
    audio = types.AudioContent(type="audio", data="not base64!", mime_type="audio/wav")
    blob = types.BlobResourceContents(uri="file:///tmp/a.bin", blob="aGVsbG8=", mime_type=None)
    values = tool_result_value(result(audio, types.EmbeddedResource(type="resource", resource=blob)))
    assert values[0] == {
        BLOB_MARKER: True,
        "kind": "audio",
        "mime_type": "audio/wav",
        "size": -1,
        "data": "not base64!",
    }
    assert values[1] == {
        BLOB_MARKER: True,
        "kind": "resource",
        "mime_type": None,
        "size": 5,
        "data": "aGVsbG8=",
        "uri": "file:///tmp/a.bin",
    }


def test_a_text_resource_is_a_plain_dict_and_is_not_parsed() -> None:
    contents = types.TextResourceContents(
        uri="file:///tmp/a.json", text='{"a": 1}', mime_type="application/json"
    )
    value = tool_result_value(result(types.EmbeddedResource(type="resource", resource=contents)))
    assert value == {
        "type": "resource",
        "uri": "file:///tmp/a.json",
        "mime_type": "application/json",
        "text": '{"a": 1}',
    }


def test_read_resource_contents_are_text_with_their_uri_or_a_blob_marker_of_kind_resource() -> None:
    text_contents = types.TextResourceContents(uri="note://a", text='{"a": 1}', mime_type=None)
    blob = types.BlobResourceContents(uri="image://a.png", blob=PNG, mime_type="image/png")
    assert resource_contents_value(text_contents) == {
        "uri": "note://a",
        "mime_type": None,
        "text": '{"a": 1}',
    }
    assert resource_contents_value(blob) == {
        BLOB_MARKER: True,
        "kind": "resource",
        "mime_type": "image/png",
        "size": 32,
        "data": PNG,
        "uri": "image://a.png",
    }


def test_a_resource_link_keeps_its_fields_but_not_its_metadata_annotations_or_icons() -> None:
    link = types.ResourceLink(
        type="resource_link",
        name="report",
        uri="file:///tmp/report.pdf",
        icons=[types.Icon(src="https://example.com/i.png")],
        annotations=types.Annotations(priority=0.5),
        _meta={"k": 1},
    )
    value = tool_result_value(result(link))
    assert value == {"type": "resource_link", "name": "report", "uri": "file:///tmp/report.pdf"}


def test_an_error_result_raises_with_the_childs_text_even_with_structured_content() -> None:
    failed = types.CallToolResult(
        content=[
            text("repo not found"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            text(""),
        ],
        structured_content={"ignored": True},
        is_error=True,
    )
    with pytest.raises(ToolCallError, match=r"^repo not found$") as raised:
        tool_result_value(failed)
    assert raised.value.kind == "ToolError"


def test_an_error_result_without_text_still_says_the_tool_failed() -> None:
    with pytest.raises(ToolCallError, match="reported an error without a message"):
        tool_result_value(types.CallToolResult(content=[], is_error=True))


@pytest.mark.parametrize("depth", [65, 990, 100_000])
def test_json_text_nested_past_the_sandboxs_boundary_stays_text(depth: int) -> None:
    # Deep enough, it raised RecursionError in the host, which ended the run as a gateway failure.
    deep = "[" * depth + "]" * depth
    assert tool_result_value(result(text(deep))) == deep


def test_json_text_nested_to_the_sandboxs_boundary_is_parsed() -> None:
    value = tool_result_value(result(text("[" * 64 + "]" * 64)))
    for _ in range(63):
        assert isinstance(value, list)
        [value] = value
    assert value == []
