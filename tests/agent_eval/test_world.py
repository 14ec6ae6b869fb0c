"""The fixture world: the same seed builds the same world, and its questions have one answer each."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.agent_eval.world import DEFAULT_SEED, RELEASE_BRANCH, Plan, build, plan


def fingerprint(world: Path) -> str:
    """A hash of every data file, the memory graph and every branch's commit hash."""
    digest = hashlib.sha256()
    for path in sorted(p for p in (world / "data").rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(world)).encode() + path.read_bytes())
    digest.update((world / "memory.jsonl").read_bytes())
    refs = subprocess.run(
        ["git", "-C", str(world / "repo"), "show-ref", "--heads"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return digest.hexdigest() + refs


def test_the_same_seed_builds_the_same_world_down_to_the_commit_hashes(
    built_world: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    build(again, DEFAULT_SEED)
    assert fingerprint(again) == fingerprint(built_world)
    assert "refs/heads/" + RELEASE_BRANCH in fingerprint(again)


def test_another_seed_builds_another_world() -> None:
    assert plan(DEFAULT_SEED + 1).order_files != plan(DEFAULT_SEED).order_files
    assert plan(DEFAULT_SEED + 1).commits != plan(DEFAULT_SEED).commits


def test_a_world_is_not_built_over_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "left-over").write_text("x", encoding="utf-8")
    with pytest.raises(FileExistsError, match="not empty"):
        build(tmp_path, DEFAULT_SEED)


def unique_top(counts: Counter[str]) -> bool:
    (_, first), (_, second) = counts.most_common(2)
    return first > second


def test_the_default_seed_gives_each_counting_question_one_answer(world_plan: Plan) -> None:
    orders = [order for orders in world_plan.order_files.values() for order in orders]
    country = {c["id"]: c["country"] for c in world_plan.customers}
    category = {p["sku"]: p["category"] for p in world_plan.products}
    team = {r["from"]: r["to"] for r in world_plan.relations if r["relationType"] == "member_of"}
    main = [c for c in world_plan.commits if c.branch == "main"]
    units: Counter[str] = Counter()
    for order in orders:
        if order.status == "shipped":
            units[category[order.sku]] += order.qty
    assert unique_top(Counter(country[o.customer_id] for o in orders if o.status == "cancelled"))
    assert unique_top(units)
    assert unique_top(Counter(team[c.author] for c in main))
    assert unique_top(Counter(c.author for c in main))
    assert unique_top(Counter(c.path for c in main[1:]))


def test_the_memory_graph_is_one_json_object_a_line_as_server_memory_stores_it(built_world: Path) -> None:
    items = [
        json.loads(line) for line in (built_world / "memory.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    entities = [i for i in items if i["type"] == "entity"]
    relations = [i for i in items if i["type"] == "relation"]
    assert len(entities) + len(relations) == len(items)
    assert all(set(e) == {"type", "name", "entityType", "observations"} for e in entities)
    assert all(set(r) == {"type", "from", "to", "relationType"} for r in relations)
    names = {e["name"] for e in entities}
    assert all(r["from"] in names and r["to"] in names for r in relations)


def test_the_repository_has_the_planned_history_on_each_branch(built_world: Path, world_plan: Plan) -> None:
    def subjects(revision: str) -> list[str]:
        done = subprocess.run(
            ["git", "-C", str(built_world / "repo"), "log", "--reverse", "--format=%s|%an|%aI", revision],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.splitlines()

    planned = [
        f"{c.message}|{c.author}|{c.when.isoformat()}" for c in world_plan.commits if c.branch == "main"
    ]
    assert subjects("main") == planned
    assert len(subjects(f"main..{RELEASE_BRANCH}")) == 3
