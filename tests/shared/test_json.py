"""Parsed JSON narrowed to the shape the code expects, or to an empty value when it is not that shape."""

from __future__ import annotations

from gateway.shared._json import as_array, as_object, properties_of


def test_an_object_is_narrowed_as_itself_and_anything_else_to_none() -> None:
    value = {"a": 1}

    assert as_object(value) is value
    assert as_object([1]) is None
    assert as_object("{}") is None


def test_an_array_is_narrowed_as_itself_and_anything_else_to_an_empty_list() -> None:
    value = [1, 2]

    assert as_array(value) is value
    assert as_array({"0": 1}) == []
    assert as_array(None) == []


def test_a_schemas_properties_keep_their_order_and_a_true_schema_reads_as_empty() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": True}}

    assert list(properties_of(schema).items()) == [("b", {"type": "string"}), ("a", {})]


def test_a_schema_without_an_object_of_properties_has_none() -> None:
    assert properties_of(None) == {}
    assert properties_of({"type": "object"}) == {}
    assert properties_of({"properties": ["a"]}) == {}
