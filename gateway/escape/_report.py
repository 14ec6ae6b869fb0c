"""`codemode-gateway sandbox-test`: the escape suite against a team's config, as a table and JUnit XML."""

from __future__ import annotations

import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio

from gateway.errors import ConfigError
from gateway.escape._runner import (
    CaseOutcome,
    SandboxTarget,
    cases_in,
    run_suite,
    still_serves,
    suite_limits,
)
from gateway.escape.cases import EscapeCase
from gateway.escape.cases._model import clip
from gateway.sandbox import Sandbox
from gateway.sandbox.limits import SandboxLimits
from gateway.shared import format_row

__all__ = [
    "format_cases",
    "junit_xml",
    "sandbox_test",
    "summary_line",
]

_DETAIL_CHARS = 80
_SUITE_NAME = "codemode-gateway sandbox-test"
# Characters XML 1.0 cannot carry at all (a snippet's error message may hold any of them).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def format_cases(cases: Sequence[EscapeCase]) -> str:
    """The `--list` table: each case, its category and what containing it means."""
    width = max((len(case.id) for case in cases), default=4)
    kinds = max([len(case.category) for case in cases] + [len("category")])
    lines = [f"{'case':<{width}}  {'category':<{kinds}}  contained when"]
    lines += [f"{c.id:<{width}}  {c.category:<{kinds}}  {c.expect.describe()}" for c in cases]
    lines.append(f"{len(cases)} cases")
    return "\n".join(lines)


def _limit_notes(config: SandboxLimits, used: SandboxLimits) -> list[str]:
    changed = [
        f"{key} {getattr(used, key):,} (config: {getattr(config, key):,})"
        for key in ("fuel", "timeout_seconds", "tool_call_timeout_seconds", "max_concurrent_executions")
        if getattr(used, key) != getattr(config, key)
    ]
    if not changed:
        return ["limits: the config's `sandbox` section, unchanged"]
    return [
        "limits: the config's `sandbox` section, except " + ", ".join(changed),
        "        (capped so that CPU and wall-clock cases end quickly; every other limit is the config's)",
    ]


def _header_notes(config: SandboxLimits, used: SandboxLimits, cases: Sequence[EscapeCase]) -> list[str]:
    notes = _limit_notes(config, used)
    if any(case.target == "sandbox" for case in cases):
        notes.append(
            "sandbox cases: a Sandbox whose tool calls reach in-process probe tools, not your servers"
        )
    if any(case.target == "gateway" for case in cases):
        notes.append(
            "policy and secrets cases: a Gateway over the probe MCP server (gateway.escape.probe_server) "
            "under the suite's own policy and approvals settings, not yours; approvals are answered in "
            "rounds, as MCP 2026-07-28 clients do"
        )
    return notes


class _Table:
    """Rows printed as the cases finish, so a long run shows progress."""

    def __init__(self, cases: Sequence[EscapeCase], out: TextIO) -> None:
        self._width = max([len(case.id) for case in cases] + [len("still-serves")])
        self._kinds = max([len(case.category) for case in cases] + [len("category")])
        self._out = out

    def _line(self, case: str, category: str, result: str, detail: str, ms: str) -> None:
        widths = (self._width, self._kinds, 6, _DETAIL_CHARS)
        print(format_row((case, category, result, detail, f"{ms:>7}"), widths), file=self._out, flush=True)

    def header(self) -> None:
        self._line("case", "category", "result", "detail", "ms")

    def row(self, outcome: CaseOutcome) -> None:
        detail = clip(outcome.detail, _DETAIL_CHARS)
        self._line(outcome.case.id, outcome.case.category, outcome.status, detail, f"{outcome.ms:.0f}")


def summary_line(outcomes: Sequence[CaseOutcome], seconds: float) -> str:
    """`N passed, M failed` (with skips and the time taken)."""
    counts = {status: sum(o.status == status for o in outcomes) for status in ("pass", "FAIL", "skip")}
    skipped = f", {counts['skip']} skipped" if counts["skip"] else ""
    return f"{counts['pass']} passed, {counts['FAIL']} failed{skipped} in {seconds:.1f} s"


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("?", text)


def junit_xml(outcomes: Sequence[CaseOutcome], seconds: float, properties: dict[str, str]) -> ET.ElementTree:
    """One testcase per case (classname = category); a case not contained is a failure."""
    counts = {
        "tests": str(len(outcomes)),
        "failures": str(sum(o.status == "FAIL" for o in outcomes)),
        "errors": "0",
        "skipped": str(sum(o.status == "skip" for o in outcomes)),
        "time": f"{seconds:.3f}",
    }
    root = ET.Element("testsuites", {"name": _SUITE_NAME, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": _SUITE_NAME, **counts})
    props = ET.SubElement(suite, "properties")
    for name, value in properties.items():
        ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
    for outcome in outcomes:
        attributes = {
            "classname": outcome.case.category,
            "name": outcome.case.id,
            "time": f"{outcome.ms / 1000:.3f}",
        }
        testcase = ET.SubElement(suite, "testcase", attributes)
        detail = _xml_text(outcome.detail)
        if outcome.status == "FAIL":
            failure = ET.SubElement(
                testcase, "failure", {"message": clip(detail, 500), "type": "NotContained"}
            )
            failure.text = detail
        elif outcome.status == "skip":
            ET.SubElement(testcase, "skipped", {"message": detail})
        else:
            ET.SubElement(testcase, "system-out").text = detail
    ET.indent(root)
    return ET.ElementTree(root)


def _write_junit(tree: ET.ElementTree, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise ConfigError(f"cannot write JUnit XML to {path}: {exc.strerror or exc}") from None


async def _run_checked(sandbox: Sandbox, cases: Sequence[EscapeCase], table: _Table) -> list[CaseOutcome]:
    # Under a config that cannot run normal work, every case would "fail": say what is wrong instead.
    broken = await still_serves(SandboxTarget(sandbox))
    if broken is not None:
        raise ConfigError(f"the sandbox cannot run a normal snippet under this config's limits: {broken}")
    table.header()
    return await run_suite(sandbox, cases, table.row)


def sandbox_test(
    limits: SandboxLimits,
    *,
    only: Sequence[str] | None = None,
    junit: Path | None = None,
    list_only: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the suite against `limits`: 0 if every case is contained, 1 if not; ConfigError if unrunnable."""
    stream = out or sys.stdout
    cases = cases_in(only)
    if list_only:
        print(format_cases(cases), file=stream)
        return 0
    used = suite_limits(limits)
    started = time.monotonic()
    with Sandbox(used) as sandbox:
        categories = len({case.category for case in cases})
        print(
            f"sandbox-test: {len(cases)} cases in {categories} categor{'y' if categories == 1 else 'ies'}, "
            f"sandbox component {sandbox.component_sha256[:12]}",
            file=stream,
        )
        for note in _header_notes(limits, used, cases):
            print(note, file=stream)
        print(file=stream)
        outcomes = anyio.run(_run_checked, sandbox, cases, _Table(cases, stream))
        component = sandbox.component_sha256
    seconds = time.monotonic() - started
    print(summary_line(outcomes, seconds), file=stream)
    failed = [o.case.id for o in outcomes if o.status == "FAIL"]
    if failed:
        print("not contained: " + ", ".join(failed), file=stream)
    if junit is not None:
        properties = {"component_sha256": component} | {
            f"sandbox.{key}": str(value) for key, value in used.model_dump().items()
        }
        _write_junit(junit_xml(outcomes, seconds, properties), junit)
    return 1 if failed else 0
