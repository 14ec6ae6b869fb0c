"""Helpers for the policy tests: a policy from config keys, made-up tools, a clock moved by hand."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations

from gateway import PolicyDenied
from gateway.catalog import Catalog, CatalogEntry
from gateway.policy import Policy
from gateway.policy.config import PolicyConfig


def get(catalog: Catalog, name: str) -> CatalogEntry:
    """The catalog's entry for `name`, which must exist."""
    entry = catalog.get(name)
    assert entry is not None, name
    return entry


class FakeClock:
    """A monotonic clock the test moves by hand: no sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def policy_of(clock: FakeClock | None = None, **config: Any) -> Policy:
    """A compiled policy from `policy` section keys."""
    parsed = PolicyConfig.model_validate(config)
    return Policy(parsed, clock=clock) if clock is not None else Policy(parsed)


def made_up_entry(
    name: str = "repo.status",
    properties: dict[str, Any] | None = None,
    *,
    read_only: bool | None = None,
    destructive: bool | None = None,
    annotated: bool = True,
) -> CatalogEntry:
    """One tool of a made-up server; `annotated=False` gives it no annotations at all."""
    server, _, tool = name.partition(".")
    hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive) if annotated else None
    schema = {"type": "object", "properties": properties or {}}
    return get(Catalog({server: [Tool(name=tool, input_schema=schema, annotations=hints)]}), name)


def denied(policy: Policy, entry: CatalogEntry, wire: dict[str, Any]) -> PolicyDenied:
    """The PolicyDenied that `wire` meets under `policy`'s argument constraints."""
    with pytest.raises(PolicyDenied) as caught:
        policy.check_arguments(entry, wire)
    return caught.value
