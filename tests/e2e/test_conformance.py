"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`) against `serve --http`.

One real gateway (the reference server `everything` under node as its only child: any child will do)
serves every scenario. The whole suite runs once per protocol era (one Node process each, the Node 22
that `make setup` installs into .cache/npm: the suite needs 22, the system node is 20), and each
server scenario that applies to a gateway is a test per era it belongs to: every check it reported
must pass, `wire-schema-valid` included: the suite validates each JSON-RPC message the gateway sent
against the spec's JSON schema for the negotiated version. The suite's other server scenarios, and
the few checks of applicable scenarios that need the suite's own fixture tools, are listed below with
the reason they do not apply; docs/conformance.md says the same for people.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.gateway_http import HttpGateway, http_gateway
from tests.e2e.gateway_process import EVERYTHING, WAIT, environment, write_config
from tests.real_servers import NPM_MODULES, REPO, npm_entry_point

pytestmark = pytest.mark.anyio

SUITE = "@modelcontextprotocol/conformance"
NODE = NPM_MODULES / "node" / "bin" / "node"
"""Node 22, from the npm package `node` (pinned in the Makefile, as the suite is)."""

HANDSHAKE = "2025-11-25"  # the handshake era: initialize, then a session
STATELESS = "2026-07-28"  # per-request _meta, no session


@dataclass(frozen=True)
class Scenario:
    """A server scenario of the suite, run at one spec version (the wire it speaks)."""

    name: str
    spec_version: str
    wire_checked: bool = True
    """Whether the suite validates this scenario's messages (`wire-schema-valid`): it does for those
    that talk through its instrumented client, not for those that send raw HTTP requests."""

    def __str__(self) -> str:
        return f"{self.name}@{self.spec_version}"


APPLICABLE = [
    Scenario("server-initialize", HANDSHAKE),
    Scenario("server-session-lifecycle", HANDSHAKE, wire_checked=False),
    Scenario("ping", HANDSHAKE),
    Scenario("tools-list", HANDSHAKE),  # tools-list checks the tool-name format too
    Scenario("tools-list", STATELESS),  # and, on this era, that the order is deterministic
    Scenario("server-stateless", STATELESS, wire_checked=False),
    Scenario("caching", STATELESS),
    Scenario("dns-rebinding-protection", HANDSHAKE, wire_checked=False),
    Scenario("dns-rebinding-protection", STATELESS, wire_checked=False),
    Scenario("server-sse-multiple-streams", HANDSHAKE, wire_checked=False),
    Scenario("server-sse-multiple-streams", STATELESS, wire_checked=False),
    Scenario("http-header-validation", STATELESS),
    Scenario("input-required-result-unsupported-methods", STATELESS),
]

_FIXTURE_TOOLS = (
    "calls the suite's fixture tools (test_simple_text, test_image_content, ...), which a gateway does not "
    "have: it serves search_docs, execute_code and the exposed child tools; its own results (text, "
    "images from show(), isError, progress, elicitation) are tested in tests/e2e"
)
_NO_PROMPTS = "the gateway serves no prompts of its own: it declares no prompts capability (-32601)"
_NO_RESOURCES = (
    "the gateway serves no resources of its own: it declares no resources capability (-32601); "
    "snippets read children's resources through resources.<server>"
)
_NO_TASKS = (
    "the tasks extension: the gateway does not declare it; a tools/call is answered within its request"
)
_INPUT_REQUIRED = (
    "calls the suite's fixture tools (test_input_required_result_*); the gateway's own InputRequiredResult "
    "(approvals on 2026-07-28) is tested in tests/e2e/test_approvals.py and test_expose.py"
)

NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": "the gateway declares no logging capability (it logs JSON lines to stderr)",
    "completion-complete": "no prompts or resource templates to complete: no completions capability",
    "tools-call-simple-text": _FIXTURE_TOOLS,
    "tools-call-image": _FIXTURE_TOOLS,
    "tools-call-audio": _FIXTURE_TOOLS,
    "tools-call-embedded-resource": _FIXTURE_TOOLS,
    "tools-call-mixed-content": _FIXTURE_TOOLS,
    "tools-call-with-logging": _FIXTURE_TOOLS,
    "tools-call-error": _FIXTURE_TOOLS,
    "tools-call-with-progress": _FIXTURE_TOOLS,
    "tools-call-sampling": _FIXTURE_TOOLS,
    "tools-call-elicitation": _FIXTURE_TOOLS,
    "json-schema-2020-12": "calls the suite's fixture tool json_schema_2020_12_tool",
    "elicitation-sep1034-defaults": "calls the suite's fixture tool; the gateway only elicits approvals",
    "elicitation-sep1330-enums": "calls the suite's fixture tool; the gateway only elicits approvals",
    "server-sse-polling": (
        "calls the suite's fixture tool test_reconnection, and SSE resumption (priming events, retry, "
        "Last-Event-ID) needs an event store, which the gateway does not configure"
    ),
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "sep-2164-resource-not-found": _NO_RESOURCES,
    "sep-2640-skills-directory": "the skills extension: the gateway does not declare it",
    "sep-2640-skills-enumeration": "the skills extension: the gateway does not declare it",
    "sep-2640-skills-manifest": "the skills extension: the gateway does not declare it",
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
    "http-custom-header-server-validation": (
        "needs a tool whose inputSchema marks parameters with x-mcp-header; the gateway's tools have none"
    ),
    "tasks-lifecycle": _NO_TASKS,
    "tasks-capability-negotiation": _NO_TASKS,
    "tasks-wire-fields": _NO_TASKS,
    "tasks-request-state-removal": _NO_TASKS,
    "tasks-mrtr-input": _NO_TASKS,
    "tasks-request-headers": _NO_TASKS,
    "tasks-dispatch-and-envelope": _NO_TASKS,
    "tasks-status-notifications": _NO_TASKS,
    "tasks-required-task-error": _NO_TASKS,
    "tasks-mrtr-composition": _NO_TASKS,
    "input-required-result-basic-elicitation": _INPUT_REQUIRED,
    "input-required-result-basic-sampling": _INPUT_REQUIRED,
    "input-required-result-basic-list-roots": _INPUT_REQUIRED,
    "input-required-result-request-state": _INPUT_REQUIRED,
    "input-required-result-multiple-input-requests": _INPUT_REQUIRED,
    "input-required-result-multi-round": _INPUT_REQUIRED,
    "input-required-result-missing-input-response": _INPUT_REQUIRED,
    "input-required-result-non-tool-request": _INPUT_REQUIRED,
    "input-required-result-result-type": _INPUT_REQUIRED,
    "input-required-result-tampered-state": _INPUT_REQUIRED,
    "input-required-result-capability-check": _INPUT_REQUIRED,
    "input-required-result-ignore-extra-params": _INPUT_REQUIRED,
    "input-required-result-validate-input": _INPUT_REQUIRED,
}
"""The suite's server scenarios that do not apply to a gateway, each with the reason."""

_MISSING_CAPABILITY = (
    "calls the suite's diagnostic tool test_missing_capability (which would need sampling); the gateway "
    "has no such tool"
)
NOT_APPLICABLE_CHECKS: dict[tuple[str, str], str] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): _MISSING_CAPABILITY,
    ("server-stateless", "sep-2575-missing-capability-http-400"): _MISSING_CAPABILITY,
    ("server-stateless", "sep-2575-server-sends-tools-list-changed-on-subscription"): (
        "changes the tool list through the suite's diagnostic tool test_trigger_tool_change; the gateway's "
        "list changes when a child's does, which tests/e2e/test_http.py checks on both eras"
    ),
    ("server-stateless", "sep-2575-server-sends-prompts-list-changed-on-subscription"): _NO_PROMPTS,
    ("caching", "sep-2549-prompts-list-caching-hints"): _NO_PROMPTS,
    ("caching", "sep-2549-resources-list-caching-hints"): _NO_RESOURCES,
    ("caching", "sep-2549-resources-templates-list-caching-hints"): _NO_RESOURCES,
    ("caching", "sep-2549-resources-read-caching-hints"): _NO_RESOURCES,
}
"""Checks of applicable scenarios that do not apply, by (scenario, check id), each with the reason."""

PASSED = {"SUCCESS", "INFO"}  # INFO: an observation, e.g. "JSON answers, SSE is optional"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that the one gateway below serves every test of this module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpGateway]:
    """`serve --http` on loopback with `everything` as its child, once the child is ready."""
    config = write_config(tmp_path_factory.mktemp("conformance"), {"mcpServers": {"everything": EVERYTHING}})
    async with http_gateway(config) as served:
        with anyio.fail_after(WAIT):
            await served.logged("child ready")
        yield served


def _node() -> Path:
    """Node 22's executable, or a failed test saying `make setup` installs it."""
    if not NODE.exists():
        pytest.fail(
            f"Node 22 (the npm package `node`) is not installed under {NPM_MODULES}: run `make setup`"
        )
    return NODE


async def _conformance(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Run the suite's CLI under Node 22; (exit code, stdout, stderr), or a failed test if it is missing."""
    command = [str(_node()), str(npm_entry_point(SUITE)), *args]  # fails the test if the suite is missing
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(command, cwd=cwd, env=environment({"NO_COLOR": "1"}), check=False)
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


@dataclass(frozen=True)
class Run:
    """One run of every scenario of the suite at one spec version: where it wrote, what it said."""

    out: Path
    said: str  # its exit code and output, for a failure message

    def checks(self, scenario: Scenario) -> list[dict[str, Any]]:
        """The checks `scenario` reported (its checks.json, under server-<name>-<time>/)."""
        found = sorted(self.out.glob(f"server-{scenario.name}-[0-9]*/checks.json"))
        if not found:
            pytest.fail(f"{scenario}: the suite wrote no checks.json\n{self.said}")
        return json.loads(found[-1].read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
async def runs(gateway: HttpGateway, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """A run of the whole suite (`--suite all`) per spec version, by version: one Node process costs
    about what each scenario alone would, so every scenario runs in one, and the tests read those
    that apply (the others fail against a gateway, as NOT_APPLICABLE says why). One version's run at a
    time: the suite's checks have deadlines of their own, which two runs sharing the cores could miss."""
    done: dict[str, Run] = {}
    for version in sorted({scenario.spec_version for scenario in APPLICABLE}):
        out = tmp_path_factory.mktemp(f"conformance-{version}")
        args = ["server", "--url", gateway.url, "--suite", "all", "--spec-version", version]
        code, stdout, stderr = await _conformance(*args, "--output-dir", str(out), cwd=out)
        done[version] = Run(out, f"exit {code}\n{stdout[-4000:]}\n{stderr[-4000:]}")
    return done


def _describe(checks: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}\n"
        f"  details: {json.dumps(c.get('details'))[:800]}"
        for c in checks
    )


def test_the_suite_and_node_installed_are_the_versions_the_makefile_pins() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    pinned = re.compile(r"^\s*(@modelcontextprotocol/conformance|node)@(\S+)", flags=re.MULTILINE)
    pins = dict(pinned.findall(makefile))
    installed = {
        SUITE: json.loads((npm_entry_point(SUITE).parents[1] / "package.json").read_text(encoding="utf-8")),
        "node": json.loads((_node().parents[1] / "package.json").read_text(encoding="utf-8")),
    }
    assert pins == {name: manifest["version"] for name, manifest in installed.items()}, "run `make setup`"
    assert pins["node"].startswith("22."), "the suite needs Node 22"


async def test_every_server_scenario_of_the_suite_is_run_or_listed_as_not_applying(tmp_path: Path) -> None:
    """A newer suite with a new scenario fails here until someone decides whether it applies."""
    code, stdout, stderr = await _conformance("list", "--server", cwd=tmp_path)
    assert code == 0, f"{stdout}\n{stderr}"
    listed = set(re.findall(r"^\s+- (\S+)", stdout, flags=re.MULTILINE))
    assert "tools-list" in listed, stdout  # the listing's format is still understood
    run = {scenario.name for scenario in APPLICABLE}
    assert not run & NOT_APPLICABLE.keys()
    assert listed == run | NOT_APPLICABLE.keys(), (
        f"in the suite only: {sorted(listed - run - NOT_APPLICABLE.keys())}; "
        f"here only: {sorted((run | NOT_APPLICABLE.keys()) - listed)}"
    )


@pytest.mark.parametrize("scenario", APPLICABLE, ids=str)
async def test_the_gateway_passes_every_check_of_a_conformance_scenario_that_applies_to_it(
    runs: dict[str, Run], scenario: Scenario
) -> None:
    checks = runs[scenario.spec_version].checks(scenario)
    excused = {check for name, check in NOT_APPLICABLE_CHECKS if name == scenario.name}
    failed = [c for c in checks if c["status"] not in PASSED and c["id"] not in excused]
    assert not failed, f"{scenario}:\n{_describe(failed)}"
    ids = {c["id"] for c in checks}
    assert excused <= ids, f"{scenario}: not-applicable checks the suite no longer reports: {excused - ids}"
    assert len(ids - excused) >= 1, f"{scenario}: no check ran"
    if scenario.wire_checked:
        assert "wire-schema-valid" in ids, f"{scenario}: the suite did not validate the messages on the wire"
