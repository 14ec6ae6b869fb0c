"""The fixture world of the agent evaluation, built deterministically from a seed.

`plan(seed)` is the world as plain data (what the generator decided); `build(directory, seed)` writes it:

- `repo/`: a git repository (main, `release/1.2`, `feature/export`) whose authors, dates and contents
  are fixed, so the same seed gives the same commit hashes;
- `data/`: order files (JSON), customers and products (CSV), stock thresholds (CSV), an empty `reports/`;
- `memory.jsonl`: a knowledge graph in `@modelcontextprotocol/server-memory`'s JSONL format
  (one `{"type": "entity", ...}` or `{"type": "relation", ...}` object a line);
- `world.json`: the seed and the support desk's time zone (the `everything` child's `SUPPORT_TZ`).

The checkers in `tasks.py` read the built files, not the plan; the tests compare the two.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_SEED", "Commit", "Order", "Plan", "build", "plan"]

DEFAULT_SEED = 1

AUTHORS = ["Ada Park", "Ben Ortiz", "Chen Wei", "Dana Kim", "Eli Novak"]
OTHER_PEOPLE = ["Fay Olsen", "Gus Reyes", "Hana Sato", "Ivan Petrov", "Jo Mensah"]
TEAMS = ["Platform", "Payments", "Data", "Frontend"]
SERVICES = {
    "billing-api": "Payments",
    "ledger-worker": "Payments",
    "search-gateway": "Platform",
    "web-shell": "Frontend",
    "etl-runner": "Data",
    "metrics-hub": "Platform",
}
PROJECTS = ["Atlas", "Beacon"]
# Zones without daylight saving time, so a conversion does not depend on the day it is asked.
ZONES = [
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Asia/Singapore",
    "America/Phoenix",
    "Africa/Nairobi",
    "Asia/Dubai",
    "Asia/Kathmandu",
    "Pacific/Honolulu",
    "Asia/Shanghai",
    "America/Bogota",
]
SOURCE_FILES = [
    "src/pricing.py",
    "src/inventory.py",
    "src/export.py",
    "docs/guide.md",
    "config/settings.toml",
    "src/orders.py",
    "README.md",
]
COUNTRIES = ["DE", "FR", "JP", "US", "BR", "IN", "KE", "NL"]
CATEGORIES = ["cables", "adapters", "storage", "displays", "audio"]
FIRST = [
    "Alma",
    "Bruno",
    "Carla",
    "Dmitri",
    "Elif",
    "Femi",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Luis",
    "Mina",
    "Nils",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
]
LAST = ["Abe", "Berg", "Costa", "Dahl", "Egan", "Fox", "Gomez", "Hart", "Ito", "Juarez", "Klein", "Lund"]
VERBS = {
    "feat": ["add", "support", "introduce"],
    "fix": ["fix", "correct", "guard"],
    "chore": ["tidy", "bump"],
}
TOPICS = [
    "bulk discounts",
    "stock alerts",
    "CSV export",
    "currency rounding",
    "retry backoff",
    "order lookup",
    "sku validation",
    "pagination",
    "timeouts",
    "audit trail",
    "cache warmup",
    "tax rules",
]

MAIN_COMMITS = 30
RELEASE_BRANCH = "release/1.2"
RELEASE_FROM = 18  # index of the main commit the release branch starts from
FEATURE_BRANCH = "feature/export"
FEATURE_FROM = 24
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Commit:
    """One commit the generator makes: on which branch, by whom, when, which file, what message."""

    branch: str
    author: str
    when: datetime
    path: str
    message: str
    settings: dict[str, int | bool] | None = None  # config/settings.toml after this commit, if it changes


@dataclass(frozen=True)
class Order:
    """One order line in an order file."""

    id: str
    customer_id: str
    sku: str
    qty: int
    unit_price: float
    status: str


@dataclass
class Plan:
    """The whole world as data."""

    seed: int
    commits: list[Commit] = field(default_factory=lambda: list[Commit]())
    customers: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    products: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    thresholds: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    order_files: dict[str, list[Order]] = field(default_factory=lambda: dict[str, list[Order]]())
    entities: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    relations: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    support_tz: str = "UTC"
    standup: str = "10:00"
    export_flag_commit: int = 0  # index in `commits` of the commit that adds features.export_v2


def email(name: str) -> str:
    """The e-mail address of a person of the world."""
    return name.lower().replace(" ", ".") + "@atlas.example"


def _message(rng: random.Random, path: str) -> str:
    kind = rng.choice(["feat", "feat", "fix", "fix", "chore"])
    scope = Path(path).stem.replace("settings", "config").replace("guide", "docs").lower()
    return f"{kind}({scope}): {rng.choice(VERBS[kind])} {rng.choice(TOPICS)}"


def _plan_commits(rng: random.Random, world: Plan) -> None:
    # Distinct counts so that "who committed most" and "which file changed most" have one answer.
    author_counts = [9, 7, 6, 5, 3]
    authors = [
        a for a, n in zip(rng.sample(AUTHORS, len(AUTHORS)), author_counts, strict=True) for _ in range(n)
    ]
    rng.shuffle(authors)
    file_counts = [8, 6, 5, 4, 3, 2, 1]  # commits 1..29; commit 0 adds every file
    paths = [
        p
        for p, n in zip(rng.sample(SOURCE_FILES, len(SOURCE_FILES)), file_counts, strict=True)
        for _ in range(n)
    ]
    rng.shuffle(paths)
    paths = ["README.md", *paths]
    settings: dict[str, int | bool] = {"max_retries": 3, "timeout_seconds": 30, "page_size": 50}
    settings_commits = [i for i, p in enumerate(paths) if p == "config/settings.toml" and i > 0]
    flag_at = settings_commits[len(settings_commits) // 2] if settings_commits else 0
    when = START
    for i in range(MAIN_COMMITS):
        when += timedelta(hours=rng.randint(3, 40), minutes=rng.choice([0, 15, 30, 45]))
        message = "chore: initial import" if i == 0 else _message(rng, paths[i])
        changed = None
        if i == 0 or paths[i] == "config/settings.toml":
            if i:
                settings = dict(settings)
                key = rng.choice(["max_retries", "timeout_seconds", "page_size"])
                settings[key] = int(settings[key]) + rng.randint(1, 4)
                if i == flag_at:
                    settings["export_v2"] = True
                    message = "feat(config): add export_v2 flag"
                    world.export_flag_commit = len(world.commits)
            changed = dict(settings)
        world.commits.append(Commit("main", authors[i], when, paths[i], message, changed))
    main = list(world.commits)
    release_settings = dict(_settings_at(main, RELEASE_FROM))
    release_settings["max_retries"] = int(release_settings["max_retries"]) + 5
    when = main[RELEASE_FROM].when
    for path, message in [
        ("config/settings.toml", "fix(config): raise retries for the 1.2 line"),
        ("src/pricing.py", "fix(pricing): backport currency rounding"),
        ("README.md", "chore: release notes for 1.2.1"),
    ]:
        when += timedelta(hours=rng.randint(2, 12))
        changed = dict(release_settings) if path == "config/settings.toml" else None
        world.commits.append(Commit(RELEASE_BRANCH, rng.choice(AUTHORS), when, path, message, changed))
    when = main[FEATURE_FROM].when
    for message in ["feat(export): stream rows", "feat(export): add parquet writer"]:
        when += timedelta(hours=rng.randint(2, 12))
        world.commits.append(Commit(FEATURE_BRANCH, rng.choice(AUTHORS), when, "src/export.py", message))


def _settings_at(commits: list[Commit], index: int) -> dict[str, int | bool]:
    return next(c.settings for c in reversed(commits[: index + 1]) if c.settings is not None)


def _plan_data(rng: random.Random, world: Plan) -> None:
    names = rng.sample([f"{f} {last}" for f in FIRST for last in LAST], 40)
    world.customers = [
        {
            "id": f"C{i + 1:03d}",
            "name": names[i],
            "country": rng.choice(COUNTRIES),
            "tier": rng.choice(["gold", "silver", "bronze"]),
        }
        for i in range(40)
    ]
    world.products = []
    for i in range(25):
        category = CATEGORIES[i % len(CATEGORIES)]
        price = round(rng.uniform(4, 400), 2)
        world.products.append(
            {
                "sku": f"SKU-{100 + i}",
                "name": f"{category[:-1].title()} model {i + 1}",
                "category": category,
                "list_price": f"{price:.2f}",
            }
        )
        world.thresholds.append(
            {
                "sku": f"SKU-{100 + i}",
                "category": category,
                "min_stock": str(rng.randint(5, 40)),
                "max_stock": str(rng.randint(60, 200)),
            }
        )
    day = datetime(2026, 3, 1)
    number = 5000
    for _ in range(12):
        orders: list[Order] = []
        for _ in range(rng.randint(15, 40)):
            number += 1
            product = rng.choice(world.products)
            discount = rng.choice([1.0, 1.0, 0.95, 0.9])
            status = rng.choices(["shipped", "cancelled", "pending"], [70, 12, 18])[0]
            orders.append(
                Order(
                    f"O{number}",
                    rng.choice(world.customers)["id"],
                    product["sku"],
                    rng.randint(1, 12),
                    round(float(product["list_price"]) * discount, 2),
                    status,
                )
            )
        world.order_files[f"orders-{day:%Y-%m-%d}.json"] = orders
        day += timedelta(days=rng.randint(2, 3))


def _plan_graph(rng: random.Random, world: Plan) -> None:
    people = AUTHORS + OTHER_PEOPLE
    teams = {person: TEAMS[i % len(TEAMS)] for i, person in enumerate(rng.sample(people, len(people)))}
    zones = dict(zip(people, rng.sample(ZONES, len(people)), strict=True))
    for person in people:
        world.entities.append(
            {
                "name": person,
                "entityType": "person",
                "observations": [
                    f"email: {email(person)}",
                    f"timezone: {zones[person]}",
                    f"role: {rng.choice(['engineer', 'senior engineer', 'sre'])}",
                ],
            }
        )
        world.relations.append({"from": person, "to": teams[person], "relationType": "member_of"})
    for team in TEAMS:
        world.entities.append(
            {"name": team, "entityType": "team", "observations": [f"channel: #{team.lower()}"]}
        )
        members = sorted(p for p in people if teams[p] == team)
        world.relations.append({"from": rng.choice(members), "to": team, "relationType": "leads"})
    for service, team in SERVICES.items():
        world.entities.append(
            {
                "name": service,
                "entityType": "service",
                "observations": [
                    f"language: {rng.choice(['go', 'python', 'rust'])}",
                    f"tier: {rng.randint(1, 3)}",
                ],
            }
        )
        world.relations.append({"from": team, "to": service, "relationType": "owns"})
        on_call = rng.choice(sorted(p for p in people if teams[p] == team))
        world.relations.append({"from": on_call, "to": service, "relationType": "on_call_for"})
    for project in PROJECTS:
        world.entities.append({"name": project, "entityType": "project", "observations": ["status: active"]})
        for person in rng.sample(people, 4):
            world.relations.append({"from": person, "to": project, "relationType": "works_on"})
    for i in range(30):
        incident = f"INC-{1040 + i}"
        service = rng.choice(sorted(SERVICES))
        world.entities.append(
            {
                "name": incident,
                "entityType": "incident",
                "observations": [
                    f"severity: {rng.choice([1, 2, 2, 3, 3])}",
                    f"opened: 2026-03-{rng.randint(1, 28):02d}",
                    f"summary: {rng.choice(TOPICS)} degraded on {service}",
                ],
            }
        )
        world.relations.append({"from": incident, "to": service, "relationType": "affects"})


def plan(seed: int = DEFAULT_SEED) -> Plan:
    """The world for `seed`, as data."""
    rng = random.Random(seed)
    world = Plan(seed=seed)
    _plan_commits(rng, world)
    _plan_data(rng, world)
    _plan_graph(rng, world)
    world.support_tz = rng.choice([z for z in ZONES if z != "Asia/Tokyo"])
    world.standup = f"{rng.randint(8, 11):02d}:{rng.choice(['00', '30'])}"
    return world


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env=base | (env or {}),
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def _settings_text(settings: dict[str, int | bool]) -> str:
    lines = ["[service]", *(f"{k} = {settings[k]}" for k in ("max_retries", "timeout_seconds", "page_size"))]
    if settings.get("export_v2"):
        lines += ["", "[features]", "export_v2 = true"]
    return "\n".join(lines) + "\n"


def _write_commit(repo: Path, number: int, commit: Commit) -> None:
    if commit.message == "chore: initial import":
        for path in SOURCE_FILES:
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"# {path}\n", encoding="utf-8")
    if commit.settings is not None:
        (repo / "config/settings.toml").write_text(_settings_text(commit.settings), encoding="utf-8")
    else:
        with (repo / commit.path).open("a", encoding="utf-8") as out:
            out.write(f"# change {number}: {commit.message}\n")
    stamp = commit.when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    env = {
        "GIT_AUTHOR_NAME": commit.author,
        "GIT_AUTHOR_EMAIL": email(commit.author),
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": commit.author,
        "GIT_COMMITTER_EMAIL": email(commit.author),
        "GIT_COMMITTER_DATE": stamp,
    }
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", commit.message, env=env)


def _build_repo(repo: Path, world: Plan) -> None:
    repo.mkdir(parents=True)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    main_shas: list[str] = []
    for number, commit in enumerate(world.commits, start=1):
        if commit.branch == "main":
            _write_commit(repo, number, commit)
            main_shas.append(_git(repo, "rev-parse", "HEAD").strip())
    for branch, start in ((RELEASE_BRANCH, RELEASE_FROM), (FEATURE_BRANCH, FEATURE_FROM)):
        _git(repo, "checkout", "--quiet", "-b", branch, main_shas[start])
        for number, commit in enumerate(world.commits, start=1):
            if commit.branch == branch:
                _write_commit(repo, number, commit)
    _git(repo, "checkout", "--quiet", "main")


def _csv(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _build_data(data: Path, world: Plan) -> None:
    (data / "orders").mkdir(parents=True)
    (data / "inventory").mkdir()
    (data / "reports").mkdir()
    (data / "customers.csv").write_text(_csv(world.customers), encoding="utf-8")
    (data / "products.csv").write_text(_csv(world.products), encoding="utf-8")
    (data / "inventory" / "thresholds.csv").write_text(_csv(world.thresholds), encoding="utf-8")
    for name, orders in world.order_files.items():
        body = {
            "date": name[len("orders-") : -len(".json")],
            "currency": "EUR",
            "orders": [vars(order) for order in orders],
        }
        (data / "orders" / name).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def _build_memory(path: Path, world: Plan) -> None:
    lines = [json.dumps({"type": "entity", **entity}) for entity in world.entities]
    lines += [json.dumps({"type": "relation", **relation}) for relation in world.relations]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def build(directory: Path, seed: int = DEFAULT_SEED) -> Plan:
    """Write the world for `seed` into `directory` (which must be empty or absent); returns its plan."""
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise FileExistsError(f"{directory} is not empty: the world is built into a fresh directory")
    world = plan(seed)
    _build_repo(directory / "repo", world)
    _build_data(directory / "data", world)
    _build_memory(directory / "memory.jsonl", world)
    meta = {"seed": seed, "support_tz": world.support_tz}
    (directory / "world.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return world
