"""The evaluation's own commands (the lead's, not the agent's):

python -m tests.agent_eval prepare --runs DIR [--trials 2] [--interface X ...] [--seed N]
    builds DIR/<interface>-<n>/ for each trial: world/, a `tool` script (the agent's one command)
    and prompt.md (AGENT_PROMPT.md filled in): give an agent prompt.md and nothing else
python -m tests.agent_eval score --runs DIR
    checks every trial's answers against its world and prints the tables (markdown)
python -m tests.agent_eval stop --runs DIR
    stops the trials' background servers
python -m tests.agent_eval expected --world DIR
    each task's expected answer for a world (for checking the harness, never for an agent)
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from string import Template

from tests.agent_eval.layout import INTERFACES, REPO, cli_command
from tests.agent_eval.scorer import load_trial, report, trial_dirs
from tests.agent_eval.tasks import TASKS, prompts
from tests.agent_eval.world import DEFAULT_SEED, build

PROMPT_TEMPLATE = Path(__file__).with_name("AGENT_PROMPT.md")


def _tool_script(trial: Path, interface: str) -> Path:
    command = cli_command(interface, trial / "world", "--log", str(trial / "calls.jsonl"))
    script = trial / "tool"
    script.write_text(
        f'#!/bin/sh\ncd {shlex.quote(str(REPO))} && exec {shlex.join(command)} "$@"\n', encoding="utf-8"
    )
    script.chmod(0o755)
    return script


def prepare(runs: Path, interfaces: list[str], trials: int, seed: int) -> list[Path]:
    """Build one trial directory per interface and trial number; returns their prompts' paths."""
    made: list[Path] = []
    for interface in interfaces:
        for number in range(1, trials + 1):
            trial = (runs / f"{interface}-{number}").resolve()
            build(trial / "world", seed)
            tool = _tool_script(trial, interface)
            tasks = "\n".join(f"- **{task_id}**: {text}" for task_id, text in prompts(trial / "world"))
            prompt = Template(PROMPT_TEMPLATE.read_text(encoding="utf-8")).substitute(
                tool=tool, world=trial / "world", tasks=tasks
            )
            (trial / "prompt.md").write_text(prompt, encoding="utf-8")
            made.append(trial / "prompt.md")
    return made


def main(argv: list[str] | None = None) -> int:
    """Run one of the evaluation's commands."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.agent_eval", description=(__doc__ or "").split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ready = commands.add_parser("prepare")
    ready.add_argument("--runs", type=Path, required=True)
    ready.add_argument("--trials", type=int, default=2)
    ready.add_argument("--interface", action="append", choices=INTERFACES)
    ready.add_argument("--seed", type=int, default=DEFAULT_SEED)
    for name in ("score", "stop"):
        commands.add_parser(name).add_argument("--runs", type=Path, required=True)
    commands.add_parser("expected").add_argument("--world", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        for prompt in prepare(args.runs, args.interface or list(INTERFACES), args.trials, args.seed):
            print(prompt)
    elif args.command == "score":
        print(report([load_trial(trial) for trial in trial_dirs(args.runs)]))
    elif args.command == "stop":
        for trial in trial_dirs(args.runs):
            interface = trial.name.rsplit("-", 1)[0]
            subprocess.run([str(trial / "tool"), "stop"], check=False, timeout=60)
            print(f"stopped {interface} for {trial.name}")
    else:
        for task in TASKS:
            print(f"{task.id}: {task.check(args.world, None).expected}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
