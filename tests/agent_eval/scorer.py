"""Scoring a set of trials: each trial's answers through the checkers, its calls and bytes from its log,
and the ratios of each interface against direct use and against the peer.

A trial is a directory `<interface>-<n>/` holding `world/` (the world the agent worked in), `calls.jsonl`
(the CLI's log) and, optionally, `answers.txt` (the agent's final message: `ANSWER Tnn: ...` lines).
An answer recorded with the CLI's `answer` command wins over one in `answers.txt`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.agent_eval.layout import INTERFACES
from tests.agent_eval.tasks import TASKS, Verdict, parse_answers

__all__ = ["Trial", "load_trial", "report", "trial_dirs"]


@dataclass
class Trial:
    """One agent's run on one interface: its usage counts and each task's verdict."""

    name: str
    interface: str
    calls: int = 0
    errors: int = 0
    bytes_written: int = 0
    bytes_read: int = 0
    verdicts: dict[str, Verdict] = field(default_factory=lambda: dict[str, Verdict]())

    @property
    def correct(self) -> int:
        """How many tasks the trial got right."""
        return sum(v.correct for v in self.verdicts.values())

    @property
    def bytes_total(self) -> int:
        """Bytes the model wrote (arguments) and read (results)."""
        return self.bytes_written + self.bytes_read


def trial_dirs(runs: Path) -> list[Path]:
    """The trial directories under `runs` (those with a world), in name order."""
    return sorted(path for path in runs.iterdir() if (path / "world" / "world.json").exists())


def load_trial(directory: Path) -> Trial:
    """Read a trial's log and answers, and run every checker against its world."""
    records: list[dict[str, object]] = []
    log = directory / "calls.jsonl"
    if log.exists():
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    interface = directory.name.rsplit("-", 1)[0]
    trial = Trial(directory.name, interface)
    answers: dict[str, str] = {}
    text = directory / "answers.txt"
    if text.exists():
        answers |= parse_answers(text.read_text(encoding="utf-8"))
    for record in records:
        if record["command"] == "answer":
            answers[str(record["task"])] = str(record["answer"])
            continue
        trial.calls += 1
        trial.errors += not record["ok"]
        trial.bytes_written += int(record["bytes_written"])  # type: ignore[arg-type]
        trial.bytes_read += int(record["bytes_read"])  # type: ignore[arg-type]
    for task in TASKS:
        trial.verdicts[task.id] = task.check(directory / "world", answers.get(task.id))
    return trial


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.0%}" if denominator else "n/a"


def report(trials: list[Trial]) -> str:
    """The result tables (markdown): per trial, per interface (mean of its trials) with ratios, per task."""
    lines = [
        "| trial | correct | calls | errors | bytes written | bytes read | written + read |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in trials:
        lines.append(
            f"| {t.name} | {t.correct}/{len(TASKS)} | {t.calls} | {t.errors} | {t.bytes_written:,} | "
            f"{t.bytes_read:,} | {t.bytes_total:,} |"
        )
    means: dict[str, dict[str, float]] = {}
    for interface in INTERFACES:
        mine = [t for t in trials if t.interface == interface]
        if mine:
            means[interface] = {
                "calls": _mean([t.calls for t in mine]),
                "bytes": _mean([t.bytes_total for t in mine]),
                "read": _mean([t.bytes_read for t in mine]),
                "trials": len(mine),
                "all_correct": all(t.correct == len(TASKS) for t in mine),
            }
    lines += [
        "",
        "| interface | trials | every task correct | calls (mean) | written + read (mean) | read (mean) | "
        "calls vs direct | bytes vs direct | bytes vs peer |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    direct, peer = means.get("direct"), means.get("peer")
    for interface, m in means.items():
        calls_vs = _ratio(m["calls"], direct["calls"]) if direct else "n/a"
        bytes_vs = _ratio(m["bytes"], direct["bytes"]) if direct else "n/a"
        peer_vs = _ratio(m["bytes"], peer["bytes"]) if peer else "n/a"
        lines.append(
            f"| {interface} | {m['trials']:.0f} | {'yes' if m['all_correct'] else 'no'} | {m['calls']:.1f} | "
            f"{m['bytes']:,.0f} | {m['read']:,.0f} | {calls_vs} | {bytes_vs} | {peer_vs} |"
        )
    lines += ["", "| task | " + " | ".join(t.name for t in trials) + " |", "|---" * (len(trials) + 1) + "|"]
    for task in TASKS:
        marks = " | ".join("ok" if t.verdicts[task.id].correct else "WRONG" for t in trials)
        lines.append(f"| {task.id} | {marks} |")
    return "\n".join(lines)
