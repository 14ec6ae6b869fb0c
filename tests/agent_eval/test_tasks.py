"""Each checker accepts the right answer (worked out here from the world's plan, not from its files) and
rejects a wrong one; write tasks are judged on the world's state."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent_eval.tasks import TASKS, parse_answers, picks, prompts
from tests.agent_eval.world import RELEASE_BRANCH, Plan

# UTC offsets of the world's zones (none has daylight saving time), in minutes.
OFFSETS = {
    "UTC": 0,
    "Asia/Tokyo": 540,
    "Asia/Kolkata": 330,
    "Asia/Singapore": 480,
    "America/Phoenix": -420,
    "Africa/Nairobi": 180,
    "Asia/Dubai": 240,
    "Asia/Kathmandu": 345,
    "Pacific/Honolulu": -600,
    "Asia/Shanghai": 480,
    "America/Bogota": -300,
}


def shift(clock: str, source: str, target: str) -> str:
    hours, minutes = (int(x) for x in clock.split(":"))
    total = (hours * 60 + minutes - OFFSETS[source] + OFFSETS[target]) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


def shipped(world: Plan) -> dict[str, float]:
    revenue: dict[str, float] = defaultdict(float)
    for orders in world.order_files.values():
        for order in orders:
            if order.status == "shipped":
                revenue[order.customer_id] += order.qty * order.unit_price
    return revenue


def relations(world: Plan, kind: str) -> list[tuple[str, str]]:
    return [(r["from"], r["to"]) for r in world.relations if r["relationType"] == kind]


def read_answers(world: Plan, directory: Path) -> dict[str, tuple[str, str]]:
    """Per read task: a right answer (as an agent might write it) and a wrong one."""
    chosen = picks(world)
    main = [c for c in world.commits if c.branch == "main"]
    authors = Counter(c.author for c in main).most_common(2)
    files = Counter(c.path for c in main[1:]).most_common(2)
    settings_main = next(c.settings for c in reversed(main) if c.settings)
    settings_release = next(
        c.settings for c in reversed(world.commits) if c.settings and c.branch == RELEASE_BRANCH
    )
    release = [c.message for c in world.commits if c.branch == RELEASE_BRANCH]
    log = subprocess.run(
        ["git", "-C", str(directory / "repo"), "log", "--format=%H %s", "main"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    flag = next(line.split()[0] for line in log if line.endswith("add export_v2 flag"))
    orders = [o for os_ in world.order_files.values() for o in os_]
    country = {c["id"]: c["country"] for c in world.customers}
    category = {p["sku"]: p["category"] for p in world.products}
    cancelled = Counter(country[o.customer_id] for o in orders if o.status == "cancelled").most_common(2)
    units: Counter[str] = Counter()
    for o in orders:
        if o.status == "shipped":
            units[category[o.sku]] += o.qty
    top_units = units.most_common(2)
    sizes = {p.name: p.stat().st_size for p in (directory / "data" / "orders").iterdir()}
    by_size = sorted(sizes, key=lambda name: -sizes[name])
    owner = dict((service, team) for team, service in relations(world, "owns"))
    leads = dict((team, person) for person, team in relations(world, "leads"))
    team_services = {s for t, s in relations(world, "owns") if t == chosen.team}
    severity = {str(e["name"]): e["observations"] for e in world.entities if e["entityType"] == "incident"}
    sev1 = sum(
        1 for i, s in relations(world, "affects") if s in team_services and "severity: 1" in severity[i]
    )  # type: ignore[operator]
    member = dict(relations(world, "member_of"))
    teams = Counter(member[c.author] for c in main).most_common(2)
    on_call = next(p for p, s in relations(world, "on_call_for") if s == chosen.on_call_service)
    zone = next(
        str(o).split(": ")[1]
        for e in world.entities
        if e["name"] == on_call
        for o in e["observations"]
        if str(o).startswith("timezone: ")
    )  # type: ignore[union-attr]
    total = sum(shipped(world).values())
    return {
        "T01": (f" {authors[0][0].upper()} ,{authors[0][1]} ", f"{authors[1][0]}, {authors[1][1]}"),
        "T02": (f"`{files[0][0]}`", files[1][0]),
        "T03": (
            f"{settings_main['max_retries']}, {settings_release['max_retries']}",
            f"{settings_release['max_retries']}, {settings_main['max_retries']}",
        ),
        "T04": (" | ".join(release), " | ".join(reversed(release))),
        "T05": (flag[:7], log[0].split()[0][:7]),
        "T06": (f"€{total:,.2f}", f"{total + 1:.2f}"),
        "T07": (cancelled[0][0].lower(), cancelled[1][0]),
        "T08": (top_units[0][0].title() + ".", top_units[1][0]),
        "T09": (f"{len(sizes)}, {by_size[0]}", f"{len(sizes)}, {by_size[1]}"),
        "T12": (
            leads[owner[chosen.service]],
            next(p for t, p in leads.items() if t != owner[chosen.service]),
        ),
        "T13": (str(sev1), str(sev1 + 1)),
        "T15": (
            ", ".join(shift(chosen.standup, "Asia/Tokyo", z) for z in ("Asia/Kolkata", "America/Phoenix")),
            ", ".join(shift(chosen.standup, "Asia/Tokyo", z) for z in ("America/Phoenix", "Asia/Kolkata")),
        ),
        "T16": (teams[0][0], teams[1][0]),
        "T17": (f"{on_call}, {shift('09:30', 'UTC', zone)}", f"{on_call}, 09:30"),
        "T18": (
            shift("22:15", "Asia/Tokyo", world.support_tz),
            "22:15" if world.support_tz != "Asia/Tokyo" else "00:00",
        ),
    }


READ_TASKS = [t for t in TASKS if t.id not in {"T10", "T11", "T14"}]


@pytest.mark.parametrize("task", READ_TASKS, ids=[t.id for t in READ_TASKS])
def test_a_read_checker_accepts_the_right_answer_and_rejects_a_wrong_one(
    task: Callable[..., object], built_world: Path, world_plan: Plan
) -> None:
    right, wrong = read_answers(world_plan, built_world)[task.id]  # type: ignore[attr-defined]
    assert task.check(built_world, right).correct, (right, task.check(built_world, right).expected)  # type: ignore[attr-defined]
    assert not task.check(built_world, wrong).correct  # type: ignore[attr-defined]
    assert not task.check(built_world, None).correct  # type: ignore[attr-defined]


def check(task_id: str, world: Path) -> bool:
    return next(t for t in TASKS if t.id == task_id).check(world, "done").correct


def report(world: Plan, ids: list[str]) -> str:
    revenue = shipped(world)
    names = {c["id"]: c["name"] for c in world.customers}
    return "customer_id,name,revenue\n" + "".join(f"{i},{names[i]},{revenue[i]:.2f}\n" for i in ids)


def test_the_report_checker_wants_the_top_three_customers_in_order(
    world_copy: Path, world_plan: Plan
) -> None:
    assert not check("T10", world_copy)
    revenue = shipped(world_plan)
    top = sorted(revenue, key=lambda cid: -revenue[cid])[:3]
    target = world_copy / "data" / "reports" / "top_customers.csv"
    target.write_text(report(world_plan, [top[1], top[0], top[2]]), encoding="utf-8")
    assert not check("T10", world_copy)
    target.write_text(report(world_plan, top), encoding="utf-8")
    assert check("T10", world_copy)


def thresholds(world: Plan, categories: set[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=["sku", "category", "min_stock", "max_stock"], lineterminator="\n"
    )
    writer.writeheader()
    for row in world.thresholds:
        raised = row["category"] in categories
        writer.writerow(dict(row, min_stock=str(int(row["min_stock"]) + 5)) if raised else row)
    return out.getvalue()


def test_the_thresholds_checker_wants_one_category_raised_and_nothing_else(
    world_copy: Path, world_plan: Plan
) -> None:
    category = picks(world_plan).category
    target = world_copy / "data" / "inventory" / "thresholds.csv"
    assert not check("T11", world_copy)
    other = next(c for c in {"cables", "audio"} if c != category)
    target.write_text(thresholds(world_plan, {category, other}), encoding="utf-8")
    assert not check("T11", world_copy)
    target.write_text(thresholds(world_plan, {category}), encoding="utf-8")
    assert check("T11", world_copy)


def test_the_memory_checker_wants_the_relation_and_the_observation(
    world_copy: Path, world_plan: Plan
) -> None:
    chosen = picks(world_plan)
    memory = world_copy / "memory.jsonl"
    items = [json.loads(line) for line in memory.read_text(encoding="utf-8").splitlines()]
    relation = {"type": "relation", "from": chosen.newcomer, "to": chosen.project, "relationType": "works_on"}
    memory.write_text("\n".join(json.dumps(i) for i in [*items, relation]) + "\n", encoding="utf-8")
    assert not check("T14", world_copy)
    for item in items:
        if item.get("name") == chosen.newcomer:
            item["observations"].append(f"joined {chosen.project} on 2026-04-01")
    memory.write_text("\n".join(json.dumps(i) for i in [*items, relation]) + "\n", encoding="utf-8")
    assert check("T14", world_copy)
    memory.write_text("\n".join(json.dumps(i) for i in [*items[1:], relation]) + "\n", encoding="utf-8")
    assert not check("T14", world_copy)


def test_there_are_at_least_fifteen_tasks_each_with_its_own_prompt(built_world: Path) -> None:
    shown = prompts(built_world)
    assert len(shown) >= 15
    assert len({text for _, text in shown}) == len(shown)
    assert all("{" not in text for _, text in shown)


def test_answer_lines_are_read_by_task_and_the_last_one_wins() -> None:
    text = "notes\nANSWER T01: Ada Park, 9\n**ANSWER T02:** src/a.py\nANSWER T01: Ben Ortiz, 7\n"
    assert parse_answers(text) == {"T01": "Ben Ortiz, 7", "T02": "src/a.py"}
