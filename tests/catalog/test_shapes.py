"""Result shapes learned from use: types and field names, never values, bounded, dropped with the schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.types import Tool

from gateway.catalog._catalog import Catalog, CatalogEntry
from gateway.catalog._search import TUNED, _index  # pyright: ignore[reportPrivateUsage]
from gateway.catalog._shapes import MemoryShapeStore, ObservedShapes, infer_shape, merge_shapes
from gateway.catalog._signatures import full_doc, render_type, signature
from guest._blob import BLOB_MARKER


def _shape(value: Any) -> str:
    return render_type(infer_shape(value))


def _entry(
    input_schema: dict[str, Any] | None = None, output_schema: dict[str, Any] | None = None
) -> CatalogEntry:
    tool = Tool(
        name="git_log",
        description="Shows the commit logs.",
        input_schema=input_schema or {"type": "object", "properties": {"repo_path": {"type": "string"}}},
        output_schema=output_schema,
    )
    entry = Catalog({"git": [tool]}).get("git.git_log")
    assert entry is not None
    return entry


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Commit history: ...", "str"),
        (3, "int"),
        (2.5, "float"),
        (True, "bool"),
        (None, "None"),
        ([], "list"),
        ({}, "dict"),
        ([1, 2, 3], "list[int]"),
        ([1, 2.5], "list[float]"),
        ([1, None], "list[int | None]"),
        ({"commits": [{"hash": "a1", "message": "m"}]}, "{'commits': list[{'hash': str, 'message': str}]}"),
        ({"@type": "Person", "first-name": "Ann"}, "{'@type': str, 'first-name': str}"),
        ({BLOB_MARKER: True, "kind": "image", "data": "iVBOR"}, "Blob"),
    ],
)
def test_a_values_shape_is_its_types_and_field_names(value: Any, expected: str) -> None:
    assert _shape(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"/home/ann/notes.md": 12, "/home/ann/todo.md": 3},  # paths
        {"2026-11-27": 4, "2026-11-28": 1},  # dates
        {"ann@example.com": 4},  # e-mail addresses
        {"3f2c9a1e-55b4-4d0e-9a43-1f0c2b7d9e11": 4},  # ids
        {"user_20261127": 4},  # digits make it data
        {"a sentence a user wrote": 4},
        {f"name{i}": 1 for i in range(17)},  # more keys than a record has
    ],
)
def test_a_mapping_whose_keys_are_data_shows_only_its_value_shape(value: dict[str, Any]) -> None:
    shape = _shape(value)
    assert shape == "dict[str, int]"
    assert not any(key in shape for key in value)


def test_no_value_ever_appears_in_a_shape() -> None:
    value = {
        "token": "s3cr3t-value",
        "count": 424242,
        "ratio": 0.987654,
        "flag": True,
        "items": [{"name": "alice-private", "score": 31337}],
    }
    text = json.dumps(infer_shape(value)) + render_type(infer_shape(value))
    for secret in ("s3cr3t-value", "424242", "0.987654", "alice-private", "31337", "true"):
        assert secret not in text


def test_a_deep_value_is_cut_at_the_depth_bound() -> None:
    assert _shape({"a": {"b": {"c": {"d": {"e": 1}}}}}) == "{'a': {'b': {'c': {'d': dict}}}}"


def test_a_huge_value_keeps_a_bounded_shape_and_its_rendering_stays_short() -> None:
    record = {f"field_{i}": {f"inner_{j}": [{"x": 1, "y": "z"}] for j in range(16)} for i in range(16)}
    value = [record] * 10_000
    shape = infer_shape(value)
    assert len(json.dumps(shape)) < 4_000
    head = full_doc(_entry(), shape).split("\n")[0]
    assert len(head) < 1_500
    assert len(signature(_entry(), observed=shape)) <= 200


def test_a_lists_element_shape_is_merged_over_its_first_items_and_keys_missing_in_some_are_optional() -> None:
    value = [{"id": 1, "note": "a"}, {"id": 2}, {"id": 3, "note": None}]
    assert _shape(value) == "list[{'id': int, 'note': NotRequired[str | None]}]"


def test_merging_keeps_a_union_and_too_many_alternatives_read_as_any() -> None:
    merged = infer_shape(1)
    for value in ("a", None, [1]):
        merged = merge_shapes(merged, infer_shape(value))
    assert render_type(merged) == "int | str | list[int] | None"
    assert render_type(merge_shapes(merged, infer_shape({"k": 1}))) == "Any"


def test_the_first_successful_call_gives_the_signature_its_observed_return_type() -> None:
    shapes, entry = ObservedShapes(), _entry()
    assert shapes.shape_of(entry) is None
    assert signature(entry, observed=shapes.shape_of(entry)).endswith("-> Any  # Shows the commit logs.")
    shapes.observe(entry, "Commit history:\nCommit: a8dd92\n")
    line = signature(entry, observed=shapes.shape_of(entry))
    assert line == "git.git_log(*, repo_path: str = None) -> str  # (observed) Shows the commit logs."
    assert "a8dd92" not in full_doc(entry, shapes.shape_of(entry))


def test_later_calls_widen_the_observed_shape() -> None:
    shapes, entry = ObservedShapes(), _entry()
    shapes.observe(entry, {"count": 1, "next": "cursor-1"})
    shapes.observe(entry, {"count": 2, "next": None})
    assert render_type(shapes.shape_of(entry)) == "{'count': int, 'next': str | None}"


def test_a_schema_change_drops_the_observed_shape() -> None:
    shapes = ObservedShapes()
    shapes.observe(_entry(), {"count": 1})
    changed = _entry(
        {"type": "object", "properties": {"repo_path": {"type": "string"}, "n": {"type": "integer"}}}
    )
    assert shapes.shape_of(_entry()) is not None
    assert shapes.shape_of(changed) is None


def test_two_tools_sharing_one_schema_object_keep_shapes_of_their_own() -> None:
    log = _entry()
    names = {"tool_name": "git_status", "python_name": "git_status", "qualified": "git.git_status"}
    status = log.model_copy(update=names)  # a copy shares the schema objects, as policy copies do
    assert log.input_schema is status.input_schema
    shapes = ObservedShapes()
    for _ in range(2):  # the second time, each key is looked up again
        shapes.observe(log, {"count": 1})
        shapes.observe(status, "clean")
    assert render_type(shapes.shape_of(log)) == "{'count': int}"
    assert render_type(shapes.shape_of(status)) == "str"


def test_a_tool_with_an_output_schema_is_never_observed() -> None:
    store = MemoryShapeStore()
    entry = _entry(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    ObservedShapes(store).observe(entry, {"n": 1})
    assert len(store) == 0


def test_the_memory_store_keeps_its_most_recently_used_shapes_up_to_its_bound() -> None:
    store = MemoryShapeStore(max_entries=2)
    store.put("a", "1")
    store.put("b", "2")
    assert store.get("a") == "1"  # used: "b" is now the oldest
    store.put("c", "3")
    assert (store.get("a"), store.get("b"), store.get("c")) == ("1", None, "3")


def test_a_shared_stores_unreadable_shape_is_no_shape() -> None:
    store = MemoryShapeStore()
    shapes, entry = ObservedShapes(store), _entry()
    shapes.observe(entry, 1)
    (key,) = store._shapes  # pyright: ignore[reportPrivateUsage]
    store.put(key, "not json{")
    assert shapes.shape_of(entry) is None
    shapes.observe(entry, 1)
    assert shapes.shape_of(entry) == {"type": "integer"}


def test_a_catalog_shows_the_shapes_of_tools_called_through_it_and_its_filtered_copies_share_them() -> None:
    tool = Tool(name="read_graph", description="Read the graph.", input_schema={"type": "object"})
    catalog = Catalog({"memory": [tool]}, shapes=ObservedShapes())
    entry = catalog.get("memory.read_graph")
    assert entry is not None
    assert catalog.shapes is not None
    catalog.shapes.observe(entry, {"entities": [{"name": "n", "observations": ["o"]}], "relations": []})
    filtered = catalog.filtered(lambda e: True)
    assert filtered.observed(entry) == catalog.observed(entry)
    assert render_type(filtered.observed(entry)) == (
        "{'entities': list[{'name': str, 'observations': list[str]}], 'relations': list}"
    )


def test_a_callers_view_shows_only_the_shapes_its_own_calls_taught() -> None:
    tool = Tool(name="get_user", description="A user's record.", input_schema={"type": "object"})
    catalog = Catalog({"crm": [tool]}, shapes=ObservedShapes())
    alice, bob = catalog.for_caller("alice (https://issuer)"), catalog.for_caller("bob (https://issuer)")
    entry = catalog.get("crm.get_user")
    assert entry is not None
    assert alice.shapes is not None
    alice.shapes.observe(entry, {"salary": 1, "carol_review": "due"})  # field names can be data
    assert render_type(alice.observed(entry)) == "{'salary': int, 'carol_review': str}"
    assert catalog.for_caller("alice (https://issuer)").observed(entry) == alice.observed(entry)
    assert bob.observed(entry) is None
    assert catalog.observed(entry) is None  # nor the shapes of the gateway's unauthenticated callers
    assert catalog.filtered(lambda e: True).for_caller("bob (https://issuer)").observed(entry) is None


def test_a_shared_store_never_holds_a_callers_name_in_its_keys() -> None:
    store = MemoryShapeStore()
    entry = _entry()
    ObservedShapes(store).for_caller("alice@example.com (https://issuer)").observe(entry, 1)
    (key,) = store._shapes  # pyright: ignore[reportPrivateUsage]
    assert "alice" not in key
    assert "issuer" not in key
    assert json.loads(key)[:2] == ["git", "git_log"]


def test_a_callers_view_shares_its_catalogs_index_and_a_catalog_without_shapes_is_its_own_view() -> None:
    tool = Tool(name="git_log", description="Shows the commit logs.", input_schema={"type": "object"})
    catalog = Catalog({"git": [tool]}, shapes=ObservedShapes())
    view = catalog.for_caller("alice (https://issuer)")
    assert view is not catalog
    assert view.origin is catalog
    assert _index(view, TUNED) is _index(catalog, TUNED)  # built once, not per caller
    unshaped = Catalog({"git": [tool]})
    assert unshaped.for_caller("alice (https://issuer)") is unshaped


def test_a_field_shaped_any_merges_with_an_answer_that_lacks_it() -> None:
    # Five kinds of `p` are more than a union holds: `p` is `{}` (any), which is falsy but a shape.
    seen = infer_shape([{"p": 1}, {"p": "s"}, {"p": None}, {"p": [1]}, {"p": {"k": 1}}])
    merged = merge_shapes(seen, infer_shape([{"q": 1}]))
    assert merged["items"]["properties"] == {"p": {}, "q": {"type": "integer"}}
    assert merged["items"]["required"] == []
