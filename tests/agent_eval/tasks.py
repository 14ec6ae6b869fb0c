"""The evaluation's tasks: each a prompt as a user would write it and a checker that computes the answer
from the built world (git through the git CLI, data from the files, the graph from memory.jsonl).

An agent answers task `T07` with one line `ANSWER T07: <answer>`; each task says its answer's format.
A checker is lenient where a reader would be (case, spacing, a trailing period, `€`, thousands
separators) and strict on content. Write tasks are judged on the world's state after the run.
"""

from __future__ import annotations

import csv
import json
import random
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tests.agent_eval.world import (
    PROJECTS,
    RELEASE_BRANCH,
    SERVICES,
    Plan,
    plan,
)

__all__ = ["TASKS", "Picks", "Task", "Verdict", "parse_answers", "picks", "prompts"]


@dataclass(frozen=True)
class Verdict:
    """A checker's judgement: whether the answer (or the world's state) is right, and what was expected."""

    correct: bool
    expected: str


@dataclass(frozen=True)
class Picks:
    """The seed-dependent particulars the prompts name (a service, a team, a person...)."""

    service: str
    on_call_service: str
    team: str
    newcomer: str
    project: str
    category: str
    standup: str


@dataclass(frozen=True)
class Task:
    """One task: its id, a prompt template (formatted with `Picks`), and its checker."""

    id: str
    kind: str  # what it exercises, for the docs' table: git, files, memory, time, cross
    prompt: str
    check: Callable[[Path, str | None], Verdict]


def picks(world: Plan) -> Picks:
    """The particulars the prompts of `world` name, drawn from its seed."""
    rng = random.Random(world.seed * 7919 + 1)
    project = rng.choice(PROJECTS)
    on_project = {
        r["from"] for r in world.relations if r["relationType"] == "works_on" and r["to"] == project
    }
    people = [str(e["name"]) for e in world.entities if e["entityType"] == "person"]
    return Picks(
        service=rng.choice(sorted(SERVICES)),
        on_call_service=rng.choice(sorted(SERVICES)),
        team=rng.choice(sorted(set(SERVICES.values()))),
        newcomer=rng.choice(sorted(p for p in people if p not in on_project)),
        project=project,
        category=rng.choice(sorted({t["category"] for t in world.thresholds})),
        standup=world.standup,
    )


def _world_picks(world: Path) -> tuple[Plan, Picks]:
    seed = int(json.loads((world / "world.json").read_text(encoding="utf-8"))["seed"])
    planned = plan(seed)
    return planned, picks(planned)


# ---- reading the world --------------------------------------------------------------------------


def _git(world: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(world / "repo"), *args], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def _orders(world: Path) -> list[dict[str, Any]]:
    orders: list[dict[str, Any]] = []
    for path in sorted((world / "data" / "orders").glob("*.json")):
        orders += json.loads(path.read_text(encoding="utf-8"))["orders"]
    return orders


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _graph(world: Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, str]] = []
    for line in (world / "memory.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            kind = item.pop("type")
            (entities if kind == "entity" else relations).append(item)
    return entities, relations


def _observation(world: Path, name: str, key: str) -> str:
    entities, _ = _graph(world)
    entity = next(e for e in entities if e["name"] == name)
    observations: list[str] = entity["observations"]  # type: ignore[assignment]
    return next(o.split(": ", 1)[1] for o in observations if o.startswith(f"{key}: "))


def _related(world: Path, relation: str, *, to: str | None = None, source: str | None = None) -> list[str]:
    _, relations = _graph(world)
    return [
        r["from"] if to is not None else r["to"]
        for r in relations
        if r["relationType"] == relation
        and (to is None or r["to"] == to)
        and (source is None or r["from"] == source)
    ]


def _shipped_revenue(world: Path) -> dict[str, float]:
    revenue: dict[str, float] = defaultdict(float)
    for order in _orders(world):
        if order["status"] == "shipped":
            revenue[str(order["customer_id"])] += int(order["qty"]) * float(order["unit_price"])  # type: ignore[arg-type]
    return revenue


def _convert(clock: str, source: str, target: str) -> str:
    hour, minute = (int(part) for part in clock.split(":"))
    moment = datetime(2026, 3, 2, hour, minute, tzinfo=ZoneInfo(source))
    return moment.astimezone(ZoneInfo(target)).strftime("%H:%M")


# ---- reading answers -----------------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("`'\"").rstrip(".").strip()).casefold()


def _parts(answer: str | None, separator: str = ",") -> list[str]:
    return [] if answer is None else [_norm(part) for part in answer.split(separator)]


def _number(text: str) -> float | None:
    cleaned = re.sub(r"[€$\s]|eur", "", text.casefold()).replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def _clock(text: str) -> str:
    found = re.search(r"(\d{1,2}):(\d{2})", text)
    return f"{int(found[1]):02d}:{found[2]}" if found else text


def _one_of(answer: str | None, accepted: set[str], shown: str) -> Verdict:
    return Verdict(answer is not None and _norm(answer) in {_norm(a) for a in accepted}, shown)


def _argmax(counts: Counter[str]) -> set[str]:
    top = max(counts.values())
    return {key for key, value in counts.items() if value == top}


# ---- the checkers --------------------------------------------------------------------------------


def top_author(world: Path, answer: str | None) -> Verdict:
    counts = Counter(_git(world, "log", "main", "--format=%an").splitlines())
    expected = {f"{name}, {counts[name]}" for name in _argmax(counts)}
    parts = _parts(answer)
    ok = len(parts) == 2 and any(parts == _parts(e) for e in expected)
    return Verdict(ok, " or ".join(sorted(expected)))


def most_changed_file(world: Path, answer: str | None) -> Verdict:
    root = _git(world, "rev-list", "--max-parents=0", "main").strip()
    touched = Counter(
        line for line in _git(world, "log", f"{root}..main", "--format=", "--name-only").splitlines() if line
    )
    return _one_of(answer, _argmax(touched), " or ".join(sorted(_argmax(touched))))


def retries_main_vs_release(world: Path, answer: str | None) -> Verdict:
    def retries(ref: str) -> str:
        text = _git(world, "show", f"{ref}:config/settings.toml")
        return re.search(r"max_retries\s*=\s*(\d+)", text)[1]  # type: ignore[index]

    expected = f"{retries('main')}, {retries(RELEASE_BRANCH)}"
    return Verdict(_parts(answer) == _parts(expected), expected)


def release_only_subjects(world: Path, answer: str | None) -> Verdict:
    subjects = _git(world, "log", "--reverse", "--format=%s", f"main..{RELEASE_BRANCH}").splitlines()
    expected = " | ".join(subjects)
    return Verdict(_parts(answer, "|") == _parts(expected, "|"), expected)


def export_flag_commit(world: Path, answer: str | None) -> Verdict:
    shas = _git(
        world, "log", "--reverse", "--format=%H", "-S", "export_v2", "main", "--", "config/settings.toml"
    ).split()
    first = shas[0]
    given = _norm(answer or "")
    return Verdict(len(given) >= 7 and first.startswith(given), first[:7])


def shipped_revenue_total(world: Path, answer: str | None) -> Verdict:
    total = round(sum(_shipped_revenue(world).values()), 2)
    given = _number(answer or "")
    return Verdict(given is not None and abs(given - total) < 0.006, f"{total:.2f}")


def cancelled_country(world: Path, answer: str | None) -> Verdict:
    country = {c["id"]: c["country"] for c in _table(world / "data" / "customers.csv")}
    counts = Counter(country[str(o["customer_id"])] for o in _orders(world) if o["status"] == "cancelled")
    return _one_of(answer, _argmax(counts), " or ".join(sorted(_argmax(counts))))


def top_category(world: Path, answer: str | None) -> Verdict:
    category = {p["sku"]: p["category"] for p in _table(world / "data" / "products.csv")}
    units: Counter[str] = Counter()
    for order in _orders(world):
        if order["status"] == "shipped":
            units[category[str(order["sku"])]] += int(order["qty"])  # type: ignore[arg-type]
    return _one_of(answer, _argmax(units), " or ".join(sorted(_argmax(units))))


def order_files(world: Path, answer: str | None) -> Verdict:
    files = sorted((world / "data" / "orders").glob("*.json"))
    largest = max(path.stat().st_size for path in files)
    accepted = {f"{len(files)}, {p.name}" for p in files if p.stat().st_size == largest}
    parts = _parts(answer)
    ok = any(parts == _parts(a) for a in accepted) or any(
        len(parts) == 2
        and parts[0] == _norm(a.split(", ")[0])
        and parts[1] == _norm(a.split(", ")[1]).removesuffix(".json")
        for a in accepted
    )
    return Verdict(ok, " or ".join(sorted(accepted)))


def top_customers_report(world: Path, answer: str | None) -> Verdict:
    revenue = _shipped_revenue(world)
    names = {c["id"]: c["name"] for c in _table(world / "data" / "customers.csv")}
    top = sorted(revenue, key=lambda cid: -revenue[cid])[:3]
    expected = "; ".join(f"{cid},{names[cid]},{revenue[cid]:.2f}" for cid in top)
    report = world / "data" / "reports" / "top_customers.csv"
    if not report.exists():
        return Verdict(False, f"data/reports/top_customers.csv with {expected}")
    lines = [line for line in report.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = list(csv.reader(lines))
    ok = (
        len(rows) == 4
        and [c.strip() for c in rows[0]] == ["customer_id", "name", "revenue"]
        and all(
            len(row) == 3
            and row[0].strip() == cid
            and row[1].strip() == names[cid]
            and re.fullmatch(r"\d+\.\d{2}", row[2].strip()) is not None
            and abs(float(row[2]) - revenue[cid]) < 0.006
            for row, cid in zip(rows[1:], top, strict=False)
        )
    )
    return Verdict(ok, f"data/reports/top_customers.csv with {expected}")


def raised_thresholds(world: Path, answer: str | None) -> Verdict:
    planned, chosen = _world_picks(world)
    expected = [
        dict(row, min_stock=str(int(row["min_stock"]) + 5)) if row["category"] == chosen.category else row
        for row in planned.thresholds
    ]
    path = world / "data" / "inventory" / "thresholds.csv"
    header = path.read_text(encoding="utf-8").splitlines()[0]
    ok = header == "sku,category,min_stock,max_stock" and _table(path) == expected
    return Verdict(ok, f"min_stock of every {chosen.category} row raised by 5, nothing else changed")


def service_lead(world: Path, answer: str | None) -> Verdict:
    _, chosen = _world_picks(world)
    team = _related(world, "owns", to=chosen.service)[0]
    return _one_of(answer, set(_related(world, "leads", to=team)), _related(world, "leads", to=team)[0])


def team_sev1_incidents(world: Path, answer: str | None) -> Verdict:
    _, chosen = _world_picks(world)
    services = set(_related(world, "owns", source=chosen.team))
    entities, relations = _graph(world)
    severity = {str(e["name"]): e["observations"] for e in entities if e["entityType"] == "incident"}
    count = sum(
        1
        for r in relations
        if r["relationType"] == "affects"
        and r["to"] in services
        and "severity: 1" in severity.get(r["from"], [])
    )  # type: ignore[operator]
    return Verdict(_norm(answer or "") == str(count), str(count))


def newcomer_recorded(world: Path, answer: str | None) -> Verdict:
    planned, chosen = _world_picks(world)
    entities, relations = _graph(world)
    joined = f"joined {chosen.project} on 2026-04-01"
    person = next((e for e in entities if e["name"] == chosen.newcomer), None)
    observed = person is not None and any(_norm(str(o)) == joined.casefold() for o in person["observations"])  # type: ignore[union-attr]
    related = {"from": chosen.newcomer, "to": chosen.project, "relationType": "works_on"} in relations
    kept = {str(e["name"]) for e in planned.entities} <= {str(e["name"]) for e in entities} and all(
        r in relations for r in planned.relations
    )
    return Verdict(
        observed and related and kept,
        f"{chosen.newcomer} works_on {chosen.project}, observation '{joined}', nothing removed",
    )


def standup_times(world: Path, answer: str | None) -> Verdict:
    _, chosen = _world_picks(world)
    expected = [_convert(chosen.standup, "Asia/Tokyo", zone) for zone in ("Asia/Kolkata", "America/Phoenix")]
    given = [_clock(part) for part in _parts(answer)]
    return Verdict(given == expected, ", ".join(expected))


def team_with_most_commits(world: Path, answer: str | None) -> Verdict:
    team = {
        person: t
        for person, t in ((r["from"], r["to"]) for r in _graph(world)[1] if r["relationType"] == "member_of")
    }
    counts = Counter(team[a] for a in _git(world, "log", "main", "--format=%an").splitlines() if a in team)
    return _one_of(answer, _argmax(counts), " or ".join(sorted(_argmax(counts))))


def on_call_local_time(world: Path, answer: str | None) -> Verdict:
    _, chosen = _world_picks(world)
    person = _related(world, "on_call_for", to=chosen.on_call_service)[0]
    local = _convert("09:30", "UTC", _observation(world, person, "timezone"))
    parts = _parts(answer)
    ok = len(parts) == 2 and parts[0] == _norm(person) and _clock(parts[1]) == local
    return Verdict(ok, f"{person}, {local}")


def support_desk_time(world: Path, answer: str | None) -> Verdict:
    zone = json.loads((world / "world.json").read_text(encoding="utf-8"))["support_tz"]
    expected = _convert("22:15", "Asia/Tokyo", zone)
    return Verdict(answer is not None and _clock(answer) == expected, expected)


TASKS: list[Task] = [
    Task(
        "T01",
        "git",
        "Who made the most commits on the main branch of the repository, and how many? "
        "Answer as `Name, count`.",
        top_author,
    ),
    Task(
        "T02",
        "git",
        "Not counting the initial commit, which file was changed in the most commits on main? "
        "Answer with its path in the repository.",
        most_changed_file,
    ),
    Task(
        "T03",
        "git",
        f"What is `max_retries` in config/settings.toml on main, and on the {RELEASE_BRANCH} "
        "branch? Answer as `main value, release value`.",
        retries_main_vs_release,
    ),
    Task(
        "T04",
        "git",
        f"Which commits are on {RELEASE_BRANCH} but not on main? Give their subject lines, "
        "oldest first, separated by ` | `.",
        release_only_subjects,
    ),
    Task(
        "T05",
        "git",
        "Which commit on main first added the `export_v2` feature flag to config/settings.toml? "
        "Answer with its short hash (7 characters).",
        export_flag_commit,
    ),
    Task(
        "T06",
        "files",
        "What is the total revenue (qty * unit_price) of all shipped orders across every "
        "order file in data/orders? Answer with the number, 2 decimals.",
        shipped_revenue_total,
    ),
    Task(
        "T07",
        "files",
        "Which customer country (data/customers.csv) has the most cancelled orders? "
        "Answer with the country code.",
        cancelled_country,
    ),
    Task(
        "T08",
        "files",
        "Which product category (data/products.csv) sold the most units in shipped orders? "
        "Answer with the category name.",
        top_category,
    ),
    Task(
        "T09",
        "files",
        "How many order files are in data/orders, and which one is the largest in bytes? "
        "Answer as `count, file name`.",
        order_files,
    ),
    Task(
        "T10",
        "files",
        "Write data/reports/top_customers.csv: the 3 customers with the highest shipped "
        "revenue (qty * unit_price), highest first, with the header `customer_id,name,revenue` and revenue "
        "with 2 decimals. Answer `done`.",
        top_customers_report,
    ),
    Task(
        "T11",
        "files",
        "In data/inventory/thresholds.csv, raise min_stock by 5 for every row of category "
        "`{category}`; leave everything else as it is. Answer `done`.",
        raised_thresholds,
    ),
    Task(
        "T12",
        "memory",
        "According to the memory graph, who leads the team that owns the service "
        "`{service}`? Answer with the person's name.",
        service_lead,
    ),
    Task(
        "T13",
        "memory",
        "How many severity-1 incidents in the memory graph affect services owned by the "
        "{team} team? Answer with the number.",
        team_sev1_incidents,
    ),
    Task(
        "T14",
        "memory",
        "Record in the memory graph that {newcomer} now works on the {project} project "
        "(relation `works_on` from the person to the project) and add the observation "
        "`joined {project} on 2026-04-01` to {newcomer}. Answer `done`.",
        newcomer_recorded,
    ),
    Task(
        "T15",
        "time",
        "Our standup is at {standup} in Asia/Tokyo. What time is it in Asia/Kolkata and in "
        "America/Phoenix? Answer as `HH:MM, HH:MM` (Kolkata first).",
        standup_times,
    ),
    Task(
        "T16",
        "cross",
        "Counting commits on main by author, and each author's team from the memory graph "
        "(`member_of`), which team has the most commits? Answer with the team name.",
        team_with_most_commits,
    ),
    Task(
        "T17",
        "cross",
        "Who is on call for `{on_call_service}` (memory graph), and what is their local "
        "time when it is 09:30 UTC (their time zone is in their observations)? Answer as `Name, HH:MM`.",
        on_call_local_time,
    ),
    Task(
        "T18",
        "cross",
        "The support desk's time zone is the SUPPORT_TZ variable in the environment of the "
        "`everything` server. An outage began at 22:15 in Asia/Tokyo: what was the local time at the "
        "support desk? Answer as `HH:MM`.",
        support_desk_time,
    ),
]


def prompts(world: Path) -> list[tuple[str, str]]:
    """Each task's id and its prompt for `world`."""
    _, chosen = _world_picks(world)
    return [(task.id, task.prompt.format(**vars(chosen))) for task in TASKS]


ANSWER_LINE = re.compile(r"^\s*\**ANSWER\s+(T\d\d)\s*(?::\s*\**|\**\s*:)\s*(.*?)\s*$", re.MULTILINE)


def parse_answers(text: str) -> dict[str, str]:
    """The `ANSWER Tnn: ...` lines of an agent's output, by task id (the last line for a task wins)."""
    return {task: answer for task, answer in ANSWER_LINE.findall(text)}
