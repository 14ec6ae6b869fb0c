"""The scorer: calls, errors and bytes summed from a trial's log, answers from the log and the agent's final
message, and the ratios against direct use and the peer."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent_eval.scorer import load_trial, report, trial_dirs
from tests.agent_eval.tasks import TASKS


def make_trial(
    runs: Path,
    name: str,
    world: Path,
    calls: list[tuple[int, int, bool]],
    answers: dict[str, str],
    final_message: str = "",
) -> Path:
    trial = runs / name
    trial.mkdir(parents=True)
    (trial / "world").symlink_to(world)
    lines = [
        {
            "interface": name.split("-")[0],
            "command": "call",
            "tool": "t",
            "bytes_written": w,
            "bytes_read": r,
            "ok": ok,
        }
        for w, r, ok in calls
    ]
    lines += [
        {"interface": name.split("-")[0], "command": "answer", "task": k, "answer": v}
        for k, v in answers.items()
    ]
    (trial / "calls.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if final_message:
        (trial / "answers.txt").write_text(final_message, encoding="utf-8")
    return trial


def test_a_trial_sums_its_calls_and_takes_recorded_answers_over_its_final_message(
    built_world: Path, tmp_path: Path
) -> None:
    expected = {t.id: t.check(built_world, None).expected for t in TASKS}
    trial_dir = make_trial(
        tmp_path,
        "gateway-1",
        built_world,
        [(100, 2000, True), (50, 300, False)],
        {"T01": expected["T01"], "T15": expected["T15"]},
        f"ANSWER T01: nobody, 0\nANSWER T13: {expected['T13']}\nANSWER T15: 00:00, 00:00\n",
    )
    trial = load_trial(trial_dir)
    assert (trial.calls, trial.errors, trial.bytes_written, trial.bytes_read) == (2, 1, 150, 2300)
    assert {k for k, v in trial.verdicts.items() if v.correct} == {"T01", "T13", "T15"}


def test_the_report_gives_each_interface_its_ratio_to_direct_and_to_the_peer(
    built_world: Path, tmp_path: Path
) -> None:
    make_trial(tmp_path, "direct-1", built_world, [(100, 900, True)] * 10, {})
    make_trial(tmp_path, "gateway-1", built_world, [(300, 700, True)] * 2, {})
    make_trial(tmp_path, "peer-1", built_world, [(200, 1800, True)] * 2, {})
    table = report([load_trial(t) for t in trial_dirs(tmp_path)])
    assert "| gateway | 1 | no | 2.0 | 2,000 | 1,400 | 20% | 20% | 50% |" in table
    assert "| direct | 1 | no | 10.0 | 10,000 | 9,000 | 100% | 100% | 250% |" in table
