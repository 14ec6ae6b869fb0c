"""Pass-through tools: wire names, what is listed and why the rest is not, the paused-call state.

Offline, over catalogs built from tool definitions; the end-to-end tests (tests/e2e/test_expose.py)
drive the real gateway with real children. The last test runs the gateway core over a real child.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import pytest
from mcp import types

from gateway.calls._exposed import WIRE_NAME, Exposure, PausedToolCall, expose_tools, wire_names
from gateway.calls._gateway import Gateway
from gateway.catalog import Catalog
from gateway.children import ChildState, ChildStatus
from gateway.config import parse_config
from gateway.errors import ResumeRefused
from gateway.policy import Policy
from gateway.policy.config import PolicyConfig
from tests.real_servers import FAULT_SERVER


def tool(name: str, **extra: Any) -> types.Tool:
    return types.Tool(name=name, description=f"The {name} tool.", input_schema={"type": "object"}, **extra)


def catalog(tools: dict[str, list[types.Tool]], states: dict[str, ChildState] | None = None) -> Catalog:
    states = states or {}
    statuses = [
        ChildStatus(name, "stdio", states.get(name, ChildState.READY), tool_count=len(own))
        for name, own in tools.items()
    ]
    return Catalog(tools, statuses)


def visible(everything: Catalog, policy: Policy) -> Catalog:
    """The catalog the model sees, filtered the way the gateway filters it."""
    blocked = policy.unmatched(everything)
    return everything.filtered(policy.visible, policy.server_visible, blocked=blocked)


def exposure_of(
    names: list[str],
    tools: dict[str, list[types.Tool]],
    policy: dict[str, Any] | None = None,
    **states: ChildState,
) -> Exposure:
    everything = catalog(tools, states)
    rules = Policy(PolicyConfig.model_validate(policy or {}))
    return expose_tools(names, visible(everything, rules), rules, everything=lambda: everything, listed=tools)


def test_wire_names_are_server__tool_in_python_names_and_fit_the_strictest_clients_rule() -> None:
    long_tool = "capture" + "_the_whole_screen" * 4
    everything = catalog({"my-screen": [tool("take-shot"), tool(long_tool)], "search": [tool("docs")]})
    names = wire_names(everything.entries)
    assert names["my_screen.take_shot"] == "my_screen__take_shot"
    assert names["search.docs"] == "search__docs"  # never search_docs, nor execute_code: `__` is in each
    cut = names[f"my_screen.{long_tool}"]
    assert len(cut) == 64
    assert cut.startswith("my_screen__capture_the_whole")
    assert all(WIRE_NAME.fullmatch(name) for name in names.values())
    assert wire_names(reversed(everything.entries)) == names  # the same whatever the order


def test_two_tools_that_would_share_a_wire_name_both_get_distinct_hashed_names() -> None:
    everything = catalog({"a__b": [tool("c")], "a": [tool("b__c")]})
    names = wire_names(everything.entries)
    assert set(names) == {"a__b.c", "a.b__c"}
    first, second = names.values()
    assert first != second
    assert first.startswith("a__b__c_")
    assert second.startswith("a__b__c_")
    assert all(WIRE_NAME.fullmatch(name) for name in names.values())


def test_an_exposed_tool_keeps_the_childs_description_schemas_and_annotations() -> None:
    hints = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    shot = tool("screenshot", title="Screenshot", output_schema={"type": "object"}, annotations=hints)
    exposure = exposure_of(["screen.screenshot", "screen.screenshot"], {"screen": [shot, tool("click")]})
    assert [t.name for t in exposure.tools] == ["screen__screenshot"]  # named twice, listed once
    [listed] = exposure.definitions
    assert listed.model_dump(exclude={"name"}) == shot.model_dump(exclude={"name"})
    found = exposure.get("screen__screenshot")
    assert found is not None
    assert found.entry.qualified == "screen.screenshot"
    assert exposure.get("screen__click") is None
    assert dict(exposure.unlisted) == {}


def test_an_entry_that_matches_no_callable_tool_is_not_listed_and_says_why() -> None:
    tools = {
        "screen": [tool("screenshot"), tool("click"), tool("secret_menu")],
        "slow": [],
        "typo": [tool("read")],
    }
    policy = {"deny": ["screen.click"], "hidden": ["screen.secret_menu"], "allow": ["*", "typo.raed"]}
    names = [
        "screen.click",
        "screen.secret_menu",
        "screen.screenshto",
        "screan.screenshot",
        "slow.anything",
        "typo.read",
        "screen.screenshot",
    ]
    exposure = exposure_of(names, tools, policy, slow=ChildState.CONNECTING)
    assert [t.name for t in exposure.tools] == ["screen__screenshot"]
    reasons = {name: (u.reason, u.lasting) for name, u in exposure.unlisted.items()}
    assert reasons["screen.click"] == ('screen.click is denied by policy (deny: "screen.click")', True)
    assert reasons["screen.secret_menu"] == ("screen.secret_menu is hidden by policy.hidden", True)
    reason, lasting = reasons["screen.screenshto"]
    assert reason.startswith("server 'screen' has no tool 'screenshto'; did you mean screen.screenshot")
    assert lasting
    assert reasons["screan.screenshot"] == ("no server 'screan'; did you mean screen?", True)
    reason, lasting = reasons["slow.anything"]
    assert reason == "server 'slow' is connecting; its tools are listed once it is ready"
    assert not lasting  # the child's state, not the config: not worth a warning
    reason, lasting = reasons["typo.read"]
    assert reason.startswith("server 'typo' is blocked: policy.allow[1]")
    assert lasting


def test_an_entry_naming_tools_by_a_python_name_they_share_is_not_listed_but_their_own_names_are() -> None:
    # `shift.drop_all` was the child's `drop-all` until it listed a `drop_all`, which took the name.
    tools = {"shift": [tool("drop-all"), tool("drop_all")]}
    names = ["shift.drop_all", "shift.drop_all_2", "shift.drop-all"]
    exposure = exposure_of(names, tools, {})
    assert [(t.name, t.entry.tool_name) for t in exposure.tools] == [("shift__drop_all_2", "drop-all")]
    reasons = {name: (u.reason, u.lasting) for name, u in exposure.unlisted.items()}
    assert reasons["shift.drop_all"] == (
        "shift.drop_all is a Python name that shift.drop-all shares, so the tool it names changes with the "
        "server's tool list: have the server rename one",
        True,
    )
    assert reasons["shift.drop_all_2"] == (
        "shift.drop_all_2 is a Python name that shift.drop_all shares, so the tool it names changes with "
        "the server's tool list: expose shift.drop-all (the child's own name)",
        True,
    )


def test_a_lazy_childs_exposed_tool_waits_for_its_first_start() -> None:
    exposure = exposure_of(["lazy.tool"], {"lazy": []}, lazy=ChildState.IDLE)
    assert exposure.unlisted["lazy.tool"].reason == (
        "server 'lazy' is idle (lazy): its tools are listed once it has started"
    )


def test_a_paused_call_state_round_trips_and_a_foreign_state_is_refused() -> None:
    paused = PausedToolCall("exec-1", "ledger.append", "digest")
    again = PausedToolCall.load(paused.dump())
    assert again == paused
    assert PausedToolCall("exec-1", "ledger.append", "digest").nonce != paused.nonce  # single-use tokens
    for foreign in ["eJwrSS0uAQAEXQHB", "{}", '{"kind": "exposed-call", "v": 2}', "null"]:
        with pytest.raises(ResumeRefused, match="call the tool again"):
            PausedToolCall.load(foreign)


@pytest.mark.anyio
async def test_the_gateway_logs_an_unlisted_entry_once_and_follows_the_childs_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fault = {"command": sys.executable, "args": [str(FAULT_SERVER)]}
    config = parse_config(
        {"mcpServers": {"fault": fault}, "expose": ["fault.late_tool", "fault.echo"]}, "test"
    )
    caplog.set_level(logging.WARNING, logger="gateway")
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            before = await gateway.settled_exposure()
            assert [t.name for t in before.tools] == ["fault__echo"]
            assert gateway.exposed() is before  # kept while the catalog is the same
            seen = gateway.catalog()
            await gateway.pool.call_tool("fault", "add_tool", {"name": "late_tool"})
            await gateway.catalog_changed(seen)
            after = gateway.exposed()
            assert [t.name for t in after.tools] == [
                "fault__late_tool",
                "fault__echo",
            ]  # as `expose` lists them
            exposed = await gateway.exposed_tool("fault__late_tool")
            assert exposed is not None
            result = await gateway.call_exposed(exposed, {})
    assert [block.text for block in result.content if isinstance(block, types.TextContent)] == [
        "late_tool answers"
    ]
    warnings = [r for r in caplog.records if r.getMessage() == "an exposed tool is not listed"]
    assert len(warnings) == 1
    assert getattr(warnings[0], "expose", None) == "fault.late_tool"
    assert "has no tool 'late_tool'" in getattr(warnings[0], "reason", "")


@pytest.mark.anyio
async def test_a_lazy_child_with_an_exposed_tool_is_started_so_that_the_tool_is_listed() -> None:
    fault = {"command": sys.executable, "args": [str(FAULT_SERVER)], "lazy": True}
    config = parse_config({"mcpServers": {"fault": fault}, "expose": ["fault.echo"]}, "test")
    async with Gateway(config) as gateway:
        with anyio.fail_after(60):
            exposure = await gateway.settled_exposure()
    assert [t.name for t in exposure.tools] == ["fault__echo"]
