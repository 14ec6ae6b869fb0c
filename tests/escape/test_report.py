"""`codemode-gateway sandbox-test`: the table, the summary line, JUnit XML, `--only`, `--list`, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gateway.escape._runner import cases_in
from gateway.escape.cases import CASES
from tests.cli.command import shared_commands

pytestmark = pytest.mark.sandbox

COMMAND = [sys.executable, "-m", "gateway"]
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)? in [\d.]+ s$", re.MULTILINE)
# Small categories with no known host bugs: one on the sandbox alone, one on a Gateway over the probe
# server (secrets: 6 cases, so the run costs about what starting that gateway does).
QUICK = ["signals", "secrets"]


def sandbox_test(*args: str) -> subprocess.CompletedProcess[str]:
    """`codemode-gateway sandbox-test ARGS`, forked from a process that imported the command line once."""
    code, out, err = shared_commands().run_sync("sandbox-test", *args)
    return subprocess.CompletedProcess([*COMMAND, "sandbox-test", *args], code, out, err)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "team.json"
    path.write_text(json.dumps({"sandbox": {"timeout_seconds": 20, "max_tool_calls": 50}}))
    return path


def test_list_names_every_case_and_what_contains_it() -> None:
    done = sandbox_test("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["case", "category", "contained", "when"]
    assert lines[-1] == f"{len(CASES)} cases"
    assert {line.split()[0] for line in lines[1:-1]} == {case.id for case in CASES}


def test_only_runs_the_chosen_categories_prints_a_table_and_writes_junit(
    config: Path, tmp_path: Path
) -> None:
    junit = tmp_path / "reports" / "sandbox.xml"
    done = sandbox_test("--config", str(config), "--only", *QUICK, "--junit-xml", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    chosen = cases_in(QUICK)

    assert "timeout_seconds 1.5 (config: 20" in done.stdout  # the suite says what it capped
    header = next(line for line in done.stdout.splitlines() if line.startswith("case "))
    assert header.split() == ["case", "category", "result", "detail", "ms"]
    rows = {
        line.split()[0]: line.split()
        for line in done.stdout.splitlines()
        if line.split()[1:2] in ([c] for c in [*QUICK, "serving"])
    }
    assert set(rows) == {case.id for case in chosen} | {"still-serves"}
    assert all(row[2] == "pass" for row in rows.values())

    summary = SUMMARY.search(done.stdout)
    assert summary is not None, done.stdout
    assert (int(summary[1]), int(summary[2])) == (len(chosen) + 1, 0)

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        str(len(chosen) + 1),
        "0",
        "0",
    )
    testcases = suite.findall("testcase")
    assert {(t.get("classname"), t.get("name")) for t in testcases} == {
        (c.category, c.id) for c in chosen
    } | {("serving", "still-serves")}
    assert all(t.find("failure") is None for t in testcases)
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["sandbox.max_tool_calls"] == "50"
    assert properties["sandbox.timeout_seconds"] == "1.5"


# A case that is not contained, added in the child process: the command must report it and exit 1. It joins
# a small category (7 cases), so the run executes little beside it.
_WITH_A_FAILING_CASE = """
import sys
from gateway.escape import _runner
from gateway.escape.cases._model import EscapeCase, value_is
from gateway.cli import main
bad = EscapeCase("fs-pretend-open-works", "signals", "open('/etc/passwd') and 'read'", value_is("read"))
_runner.CASES = (*_runner.CASES, bad)
main(sys.argv[1:])
"""


def test_a_case_not_contained_fails_the_run_with_exit_1(tmp_path: Path) -> None:
    junit = tmp_path / "sandbox.xml"
    argv = ["sandbox-test", "--only", "signals", "--junit-xml", str(junit)]
    done = subprocess.run(
        [sys.executable, "-c", _WITH_A_FAILING_CASE, *argv], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("fs-pretend-open-works"))
    assert row.split()[2] == "FAIL"
    assert "SandboxRestriction" in row
    summary = SUMMARY.search(done.stdout)
    assert summary is not None
    assert summary[2] == "1"
    assert "not contained: fs-pretend-open-works" in done.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "1"
    failed = [t for t in suite.findall("testcase") if t.find("failure") is not None]
    assert [(t.get("classname"), t.get("name")) for t in failed] == [("signals", "fs-pretend-open-works")]


def test_config_errors_exit_2(tmp_path: Path) -> None:
    # Limits too tight for normal work: every case would "fail", so the command says why instead.
    starved = tmp_path / "starved.json"
    starved.write_text(json.dumps({"sandbox": {"max_stdout_bytes": 0}}))
    done = sandbox_test("--config", str(starved), "--only", "signals")
    assert done.returncode == 2
    assert "cannot run a normal snippet" in done.stderr

    done = sandbox_test("--only", "no-such-category")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
