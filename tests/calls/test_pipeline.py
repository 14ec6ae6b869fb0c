"""The steps every kind of call shares: the secrets refusal, the child request, redaction, bounded work."""

from __future__ import annotations

import threading
from typing import cast

import anyio
import pytest

from gateway.calls._pipeline import Execution, Pipeline, bounded_work
from gateway.catalog import Catalog
from gateway.children import ChildPool
from gateway.errors import ChildUnavailable, SecretInArguments, ToolCallError
from gateway.policy import Policy, no_approver
from gateway.policy.config import PolicyConfig
from gateway.shared._redaction import Redactor

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-kept-by-the-gateway"


def _pipeline() -> Pipeline:
    return Pipeline(cast("ChildPool", object()), Redactor({SECRET: "TOKEN"}), None)


def _execution() -> Execution:
    return Execution("exec-1", Catalog(), Policy(PolicyConfig()), no_approver)


def test_a_request_holding_a_secret_ends_the_execution_naming_where_never_the_value() -> None:
    with pytest.raises(SecretInArguments) as refused:
        _pipeline().refuse_secrets("a resource request", ["files", f"file:///{SECRET}"])
    message = str(refused.value)
    assert message.startswith("a resource request carried the value of TOKEN")
    assert SECRET not in message


def test_a_request_without_a_secret_passes_the_secrets_step() -> None:
    _pipeline().refuse_secrets("a tool name", "files.read")


async def test_a_child_that_is_down_is_a_tool_error_the_snippet_can_catch() -> None:
    pipeline = _pipeline()
    call = pipeline.start(_execution(), "files:file:///a", {"uri": "file:///a"}, "resources/read")

    async def down() -> None:
        raise ChildUnavailable("files is not running (it exited); other children still serve")

    with anyio.fail_after(5), pytest.raises(ToolCallError) as refused:
        await pipeline.child(call, down())
    assert type(refused.value) is ToolCallError
    assert "files is not running" in str(refused.value)


async def test_a_refusal_is_redacted_before_the_snippet_reads_it() -> None:
    error = _pipeline().redacted(ToolCallError(f"the child echoed {SECRET}"))
    assert SECRET not in str(error)
    assert "TOKEN" in str(error)


async def test_the_finish_counts_the_call_on_its_execution_whatever_its_kind() -> None:
    pipeline, execution = _pipeline(), _execution()
    for kind in ("tools/call", "resources/read", "resources/list"):
        call = pipeline.start(execution, "x", {}, kind)
        with anyio.fail_after(5):
            await pipeline.finish(call, None)
    assert execution.calls == 3


async def test_small_work_runs_on_the_event_loop_and_large_work_on_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    with anyio.fail_after(10):
        small = await bounded_work(False, threading.get_ident)
        large = await bounded_work(True, threading.get_ident)
    assert small == loop_thread
    assert large != loop_thread
