"""The tool-call pipeline: each check in its place, nothing counted or sent before it passes, all recorded."""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import types

from gateway import PolicyDenied, QuotaExceeded, SecretInArguments, ToolCallError
from gateway.audit import AuditLog, Caller
from gateway.auth import Owner
from gateway.calls import _tool_calls as tool_calls_module
from gateway.calls._pipeline import Execution, PausedCallAnswer
from gateway.calls._tool_calls import ToolCalls, wire_digest
from gateway.catalog import Catalog, ObservedShapes
from gateway.catalog._shapes import MemoryShapeStore
from gateway.children import ChildPool
from gateway.errors import ApprovalRequired, ResumeRefused
from gateway.middleware import Call, CallNext, Chain, Layer
from gateway.policy import ApprovalOutcome, Policy, no_approver, pause_for_approval
from gateway.policy.config import PolicyConfig
from gateway.shared._redaction import Redactor

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-Token-Value-9"
SUM_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


class RecordingPool:
    """Stands in for the child pool: records what reaches a child and answers with `answer`."""

    def __init__(self, answer: types.CallToolResult) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.holders: list[Hashable | None] = []  # whose share of the child's call slots each took

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], *, holder: Hashable | None = None
    ) -> types.CallToolResult:
        self.calls.append((server, tool, arguments))
        self.holders.append(holder)
        return self.answer


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _catalog(shapes: ObservedShapes | None = None) -> Catalog:
    tools = [
        types.Tool(name="get-sum", input_schema=SUM_SCHEMA),
        types.Tool(name="commit", input_schema={"type": "object"}),
        types.Tool(name="create_thing", input_schema={"type": "object"}),
    ]
    return Catalog({"calc": tools}, shapes=shapes)


class Harness:
    def __init__(self, tmp_path: Path, answer: types.CallToolResult, **policy: Any) -> None:
        self.pool = RecordingPool(answer)
        self.policy = Policy(PolicyConfig.model_validate(policy))
        self.audit_path = tmp_path / "audit.jsonl"
        self.audit = AuditLog(self.audit_path)
        catalog = _catalog()
        pool = cast(ChildPool, self.pool)
        self.tool_calls = ToolCalls(pool, Redactor({SECRET: "TOKEN"}), self.audit, lambda: catalog)
        self.progress: list[int] = []
        self.asked: list[str] = []
        self.approval: ApprovalOutcome = "approved"
        self.execution = Execution("exec-1", catalog, self.policy, self._approve, self._report)

    async def _approve(self, tool: str, arguments: dict[str, Any]) -> ApprovalOutcome:
        self.asked.append(tool)
        return self.approval

    async def _report(self, calls: int, elapsed: float) -> None:
        self.progress.append(calls)

    async def call(self, name: str, **arguments: Any) -> Any:
        with anyio.fail_after(5):
            return await self.tool_calls.call(self.execution, name, arguments)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]


async def test_calls_refused_by_access_arguments_or_constraints_count_against_no_quota(
    tmp_path: Path,
) -> None:
    calls = Harness(
        tmp_path,
        _text("3"),
        deny=["calc.commit"],
        max_tool_calls=1,
        tools={"calc.get_sum": {"args": {"properties": {"a": {"maximum": 100}}}}},
    )
    with pytest.raises(PolicyDenied, match="deny"):
        await calls.call("calc.commit")
    with pytest.raises(ToolCallError, match="invalid arguments"):
        await calls.call("calc.get_sum", a="one", b=2)
    with pytest.raises(PolicyDenied, match="maximum"):
        await calls.call("calc.get_sum", a=101, b=0)
    assert calls.execution.quota.calls == 0
    assert calls.pool.calls == []
    assert await calls.call("calc.get_sum", a=100, b=0) == 3
    with pytest.raises(QuotaExceeded):
        await calls.call("calc.get_sum", a=1, b=0)
    assert calls.pool.calls == [("calc", "get-sum", {"a": 100, "b": 0})]


async def test_approval_is_asked_only_after_the_quota_admits_the_call(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("made"), approve=["calc.create_thing"], max_tool_calls=1)
    calls.approval = "declined"
    with pytest.raises(PolicyDenied, match="declined"):
        await calls.call("calc.create_thing")
    with pytest.raises(QuotaExceeded):
        await calls.call("calc.create_thing")
    assert calls.asked == ["calc.create_thing"]  # the quota refused the second before anyone was asked
    assert calls.pool.calls == []


async def test_the_child_gets_wire_names_and_the_snippet_gets_the_redacted_value(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text(json.dumps({"token": SECRET, "n": 1})))
    assert await calls.call("calc.get_sum", a=1, b=2) == {"token": "[REDACTED:TOKEN]", "n": 1}
    assert calls.pool.calls == [("calc", "get-sum", {"a": 1, "b": 2})]


async def test_a_results_shape_is_kept_once_redacted_so_a_secret_key_never_becomes_a_field_name(
    tmp_path: Path,
) -> None:
    store = MemoryShapeStore()
    calls = Harness(tmp_path, _text(json.dumps({SECRET: {"n": 1}, "count": 2})))
    calls.execution.catalog = _catalog(ObservedShapes(store))
    await calls.call("calc.get_sum", a=1, b=2)
    entry = calls.execution.catalog.get("calc.get_sum")
    assert entry is not None
    assert calls.execution.catalog.observed(entry) == {
        "type": "object",
        "additionalProperties": {
            "anyOf": [
                {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                {"type": "integer"},
            ]
        },
    }
    kept = json.dumps(store._shapes)  # pyright: ignore[reportPrivateUsage]
    assert SECRET not in kept
    assert "REDACTED" not in kept


async def test_a_failed_call_leaves_no_shape(tmp_path: Path) -> None:
    store = MemoryShapeStore()
    calls = Harness(tmp_path, _text("no such repository", error=True))
    calls.execution.catalog = _catalog(ObservedShapes(store))
    with pytest.raises(ToolCallError):
        await calls.call("calc.get_sum", a=1, b=2)
    assert len(store) == 0


async def test_a_childs_error_text_is_redacted_and_keeps_its_class(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text(f"bad credentials {SECRET}", error=True))
    with pytest.raises(ToolCallError) as caught:
        await calls.call("calc.get_sum", a=1, b=2)
    assert str(caught.value) == "bad credentials [REDACTED:TOKEN]"
    assert caught.value.kind == "ToolError"


async def test_every_call_is_audited_and_reported_whatever_its_outcome(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("3"), deny=["calc.commit"], approve=["calc.create_thing"])
    calls.approval = "unavailable"
    await calls.call("calc.get_sum", a=1, b=2)
    for name in ("calc.commit", "calc.create_thing", "calc.nope"):
        with pytest.raises(ToolCallError):
            await calls.call(name)
    records = calls.records()
    assert [(r["tool"], r["ok"], r["error"], r["approval"]) for r in records] == [
        ("calc.get_sum", True, None, "not_required"),
        ("calc.commit", False, "PolicyDenied", "not_required"),
        ("calc.create_thing", False, "PolicyDenied", "unavailable"),
        ("calc.nope", False, "ToolError", "not_required"),
    ]
    assert {r["execution_id"] for r in records} == {"exec-1"}
    assert calls.progress == [1, 2, 3, 4]


async def test_a_hidden_tool_is_unknown_to_the_pipeline(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("3"), hidden=["calc.commit"])
    visible = _catalog().filtered(calls.policy.visible)
    calls.execution = Execution("exec-2", visible, calls.policy, no_approver)
    with pytest.raises(ToolCallError, match=r"unknown tool 'calc\.commit'") as caught:
        await calls.call("calc.commit")
    assert "denied" not in str(caught.value)
    assert calls.pool.calls == []


@pytest.mark.parametrize(("size", "on_the_loop"), [(10, True), (50_000, False)])
async def test_argument_checks_leave_the_event_loop_for_large_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, on_the_loop: bool
) -> None:
    calls = Harness(tmp_path, _text("3"))
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []
    real = tool_calls_module.prepare_arguments

    def recording(entry: Any, arguments: Any) -> Any:
        seen.append(threading.current_thread())
        return real(entry, arguments)

    monkeypatch.setattr(tool_calls_module, "prepare_arguments", recording)
    with pytest.raises(ToolCallError, match="invalid arguments"):
        await calls.call("calc.get_sum", a=[0] * size, b=1)
    assert (seen == [loop_thread]) is on_the_loop


async def test_a_secret_in_a_name_or_in_arguments_ends_the_run_without_echoing_it(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("3"))
    with pytest.raises(SecretInArguments) as in_arguments:
        await calls.call("calc.get_sum", a=f"x {SECRET} y", b=1)
    with pytest.raises(SecretInArguments) as in_name:
        await calls.call(f"calc.{SECRET}")
    for error in (in_arguments.value, in_name.value):
        assert SECRET not in str(error)
        assert "REDACTED" not in str(error)
        assert "the value of TOKEN" in str(error)
    assert calls.pool.calls == []
    assert [r["error"] for r in calls.records()] == ["SecretInArguments", "SecretInArguments"]


def _resumed(calls: Harness, outcome: ApprovalOutcome, tool: str, **shown: Any) -> None:
    """Make the harness's run a resumed round: the user answered `outcome` about `tool(**shown)`."""
    calls.execution.approver = pause_for_approval
    callee = json.dumps(["calc", tool.partition(".")[2]])  # the child's own names, as the prompt's call had
    calls.execution.answer = PausedCallAnswer(outcome, tool, wire_digest(shown, callee))


async def test_a_call_that_needs_approval_pauses_the_run_and_gives_its_quota_back(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("made"), approve=["calc.create_thing"], max_tool_calls=1)
    calls.execution.approver = pause_for_approval
    with pytest.raises(ApprovalRequired) as paused:
        await calls.call("calc.create_thing", title="x")
    assert (paused.value.tool, paused.value.arguments) == ("calc.create_thing", {"title": "x"})
    assert calls.execution.paused is paused.value
    assert calls.execution.quota.counts() == {}  # asked again, and counted, when the execution resumes
    assert calls.pool.calls == []
    assert calls.records()[-1]["approval"] == "pending"


async def test_the_answer_goes_to_the_paused_call_alone(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("made"), approve=["calc.create_thing"])
    _resumed(calls, "approved", "calc.create_thing", title="x")
    assert await calls.call("calc.create_thing", title="x") == "made"
    with pytest.raises(ApprovalRequired):  # the next marked call is asked about in a round of its own
        await calls.call("calc.create_thing", title="x")
    assert calls.pool.calls == [("calc", "create_thing", {"title": "x"})]


async def test_an_answer_is_not_given_to_another_tool_that_took_the_shown_tools_python_name(
    tmp_path: Path,
) -> None:
    # The user approved `calc.create_thing` when that name was the child's `create-thing`; the child
    # has since listed a `create_thing`, which took the name.
    calls = Harness(tmp_path, _text("made"), approve_destructive=True)
    calls.execution.approver = pause_for_approval
    shown = wire_digest({"title": "x"}, json.dumps(["calc", "create-thing"]))
    calls.execution.answer = PausedCallAnswer("approved", "calc.create_thing", shown)
    with pytest.raises(ResumeRefused, match="is not the call the user was shown"):
        await calls.call("calc.create_thing", title="x")
    assert calls.pool.calls == []


async def test_an_answer_whose_call_is_refused_first_is_dropped_not_given_to_the_next_call(
    tmp_path: Path,
) -> None:
    # The paused call is refused before approval in the resumed round (its quota filled meanwhile):
    # a later call the user never saw must not inherit the approval.
    calls = Harness(
        tmp_path,
        _text("made"),
        approve=["calc.create_thing", "calc.commit"],
        tools={"calc.create_thing": {"max_calls": 0}},
    )
    _resumed(calls, "approved", "calc.create_thing", title="shown")
    with pytest.raises(QuotaExceeded):
        await calls.call("calc.create_thing", title="shown")
    with pytest.raises(ApprovalRequired):
        await calls.call("calc.commit", message="unseen")
    assert calls.pool.calls == []


async def test_a_resumed_call_other_than_the_one_shown_ends_the_run(tmp_path: Path) -> None:
    calls = Harness(tmp_path, _text("made"), approve=["calc.create_thing"])
    _resumed(calls, "approved", "calc.create_thing", title="shown")
    with pytest.raises(ResumeRefused, match="not the call the user was shown"):
        await calls.call("calc.create_thing", title="other")
    assert calls.pool.calls == []


async def test_a_call_to_no_tool_with_huge_arguments_is_recorded_tersely_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = Harness(tmp_path, _text("3"))
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []
    real = AuditLog.tool_call

    def recording(self: AuditLog, *args: Any, **kwargs: Any) -> None:
        seen.append(threading.current_thread())
        real(self, *args, **kwargs)

    monkeypatch.setattr(AuditLog, "tool_call", recording)
    with pytest.raises(ToolCallError, match="unknown tool"):
        await calls.call("calc.nothing", text="é" * 120_000)
    with pytest.raises(ToolCallError, match="unknown tool"):
        await calls.call("calc.nothing", text="small")
    assert seen[0] is not loop_thread
    assert seen[1] is loop_thread
    for record in calls.records():
        assert "arguments" not in record
        assert len(record["arguments_sha256"]) == 64
    assert calls.audit_path.stat().st_size < 1_024


async def test_a_middleware_sees_the_callers_issuer_beside_its_principal(tmp_path: Path) -> None:
    seen: list[Call] = []

    async def recording(call: Call, call_next: CallNext) -> Any:
        seen.append(call)
        return await call_next(call)

    calls = Harness(tmp_path, _text("3"))
    caller = Caller(principal="alice", issuer="https://idp.example.com")
    chain = Chain((Layer("recording", recording),))
    calls.execution = Execution(
        "exec-3", _catalog(), calls.policy, no_approver, caller=caller, middleware=chain
    )
    await calls.call("calc.get_sum", a=1, b=2)
    [call] = seen
    assert (call.principal, call.issuer) == ("alice", "https://idp.example.com")


async def test_a_call_takes_its_callers_share_of_the_childs_slots_by_issuer_and_principal(
    tmp_path: Path,
) -> None:
    calls = Harness(tmp_path, _text("3"))
    await calls.call("calc.get_sum", a=1, b=2)  # nobody identified (stdio): no share
    for issuer in ("https://idp.example.com", "https://other.example.com"):
        calls.execution = Execution(
            "exec-4", _catalog(), calls.policy, no_approver, caller=Caller(principal="alice", issuer=issuer)
        )
        await calls.call("calc.get_sum", a=1, b=2)
    assert calls.pool.holders == [
        None,
        Owner("https://idp.example.com", "alice"),
        Owner("https://other.example.com", "alice"),
    ]
