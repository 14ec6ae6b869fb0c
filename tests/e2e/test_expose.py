"""Pass-through tools (`expose`), end to end on both protocol eras; and a child's screenshot shown by a
snippet, which reaches the client as an image block just as an exposed tool's does.

The real gateway process, real child processes (`tests/servers/screen_server.py` answers an image,
the ledger counts side effects, the fault server changes its tools at run time) and the SDK's own
`Client`: `mode="auto"` negotiates 2026-07-28, `mode="legacy"` the handshake era.

One gateway per era serves the module's tests that need no config of their own: it exposes the screen
server's three tools and the ledger's `append` (which needs approval); each test tags its ledger
entries and reads only the audit records written while it ran. A second gateway per era, of a client
that cannot be asked, exposes the ledger's `append` and the fault server's tools: its tests tag their
entries likewise, and only one of them changes the fault server's tools.
"""

from __future__ import annotations

import base64
import json
import math
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.client.session import IncomingMessage

from tests.e2e.gateway_process import (
    WAIT,
    cli,
    environment,
    full_record,
    ledger_entries,
    ledger_server,
    sdk_client,
    text,
    write_config,
)
from tests.real_servers import FAULT_SERVER, SCREEN_SERVER
from tests.servers.screen_server import SCREENSHOT
from tests.servers.screen_server import build as build_screen

pytestmark = pytest.mark.anyio

ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])
TOKEN_VAR = "CODEMODE_TEST_SCREEN_TOKEN"
SCREEN: dict[str, Any] = {
    "command": sys.executable,
    "args": [str(SCREEN_SERVER)],
    "env": {"SCREEN_TOKEN": "${" + TOKEN_VAR + ":-no token}"},
}


SHARED_EXPOSE = ["screen.screenshot", "screen.status", "screen.broken", "ledger.append"]


class User:
    """The person at the client: answers each approval in turn and remembers each prompt."""

    def __init__(self, *actions: str) -> None:
        self.actions = list(actions)
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action=self.actions.pop(0), content={})  # type: ignore[arg-type]


@dataclass
class Shared:
    """The module's gateways: their directory (config, ledger, audit log), the screen token they
    redact, and the user at their clients, whom each test gives its own answers."""

    directory: Path
    token: str
    user: User

    @property
    def config(self) -> Path:
        return self.directory / "team.json"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    directory = tmp_path_factory.mktemp("expose")
    write_config(
        directory,
        {
            "mcpServers": {"screen": SCREEN, "ledger": ledger_server(directory)},
            "expose": SHARED_EXPOSE,
            "policy": {"approve": ["ledger.append"]},
            "audit": {"path": str(directory / "audit.jsonl")},
        },
    )
    return Shared(directory, "scr-" + secrets.token_hex(16), User())


@pytest.fixture(scope="module")
async def auto_client(shared: Shared) -> AsyncIterator[Client]:
    env = environment({TOKEN_VAR: shared.token})
    async with sdk_client(shared.config, "auto", env=env, elicitation=shared.user) as client:
        yield client


@pytest.fixture(scope="module")
async def legacy_client(shared: Shared) -> AsyncIterator[Client]:
    env = environment({TOKEN_VAR: shared.token})
    async with sdk_client(shared.config, "legacy", env=env, elicitation=shared.user) as client:
        yield client


@pytest.fixture
def eras(auto_client: Client, legacy_client: Client) -> dict[str, Client]:
    """The shared client of each era, by its mode."""
    return {"auto": auto_client, "legacy": legacy_client}


@pytest.fixture
def user(shared: Shared) -> User:
    """The user at the shared clients, with no answers until the test gives some."""
    shared.user.actions, shared.user.prompts = [], []
    return shared.user


@pytest.fixture
def tag() -> str:
    """This test's own token: its ledger entries carry it."""
    return secrets.token_hex(6)


@pytest.fixture
def new_calls(shared: Shared) -> Callable[[], list[dict[str, Any]]]:
    """The tool calls the shared gateways audited since the test began (one test runs at a time)."""
    path = shared.directory / "audit.jsonl"
    seen = len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0

    def calls() -> list[dict[str, Any]]:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[seen:]]
        return [record for record in records if record["kind"] == "tool_call"]

    return calls


def entries(directory: Path, tag: str) -> list[str]:
    """What reached the ledger under `tag`, oldest first, without the tag."""
    return [
        entry.removeprefix(f"{tag} ") for entry in ledger_entries(directory) if entry.startswith(f"{tag} ")
    ]


def screen_config(tmp_path: Path, expose: list[str], **sections: Any) -> Path:
    return write_config(
        tmp_path,
        {
            "mcpServers": {"screen": SCREEN},
            "expose": expose,
            "audit": {"path": str(tmp_path / "audit.jsonl")},
            **sections,
        },
    )


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def tool_calls(tmp_path: Path) -> list[dict[str, Any]]:
    return [record for record in audit(tmp_path) if record["kind"] == "tool_call"]


async def listed(client: Client) -> dict[str, types.Tool]:
    with anyio.fail_after(WAIT):
        return {tool.name: tool for tool in (await client.list_tools()).tools}


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(name, arguments or {})


@pytest.fixture(scope="module")
async def the_childs_own_tools() -> dict[str, types.Tool]:
    """The screen server's tools as it lists them to a client of its own (in-process: what it lists
    does not depend on the transport, and a process of its own would cost a Python start-up)."""
    async with Client(build_screen(), mode="legacy", read_timeout_seconds=WAIT) as client:
        return await listed(client)


@ERAS
async def test_an_exposed_tool_is_listed_beside_the_two_tools_with_the_childs_definition(
    eras: dict[str, Client], the_childs_own_tools: dict[str, types.Tool], mode: ConnectMode
) -> None:
    client = eras[mode]
    tools = await listed(client)
    declared = client.server_capabilities.tools
    assert list(tools) == [
        "search_docs",
        "execute_code",
        "screen__screenshot",
        "screen__status",
        "screen__broken",
        "ledger__append",
    ]
    assert declared is not None
    assert declared.list_changed is True
    own = the_childs_own_tools["screenshot"]
    shot = tools["screen__screenshot"]
    assert (shot.title, shot.description) == (own.title, own.description)
    assert shot.input_schema == own.input_schema
    assert shot.output_schema == own.output_schema
    assert shot.annotations == own.annotations
    assert shot.annotations is not None
    assert (shot.annotations.read_only_hint, shot.annotations.idempotent_hint) == (True, True)


@ERAS
async def test_an_exposed_tool_answers_with_the_childs_image_intact_and_each_call_is_audited(
    eras: dict[str, Client], new_calls: Callable[[], list[dict[str, Any]]], mode: ConnectMode
) -> None:
    first = await call(eras[mode], "screen__screenshot", {"label": "login page"})
    second = await call(eras[mode], "screen__screenshot", {})
    assert not first.is_error, text(first)
    image, caption = first.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == SCREENSHOT  # an image, byte for byte: never text
    assert isinstance(caption, types.TextContent)
    assert caption.text == "screenshot of login page"
    assert text(second) == "screenshot of screen"
    records = new_calls()
    assert [(r["tool"], r["ok"], r["approval"]) for r in records] == [
        ("screen.screenshot", True, "not_required"),
        ("screen.screenshot", True, "not_required"),
    ]
    assert records[0]["execution_id"] != records[1]["execution_id"]  # each direct call is its own


async def test_a_secret_in_an_exposed_tools_result_is_redacted_and_a_child_error_stays_an_error(
    auto_client: Client, shared: Shared, new_calls: Callable[[], list[dict[str, Any]]]
) -> None:
    status = await call(auto_client, "screen__status")
    broken = await call(auto_client, "screen__broken")
    assert not status.is_error, text(status)
    assert status.structured_content == {"session": "open", "token": f"[REDACTED:{TOKEN_VAR}]"}
    assert shared.token not in text(status)
    assert f"[REDACTED:{TOKEN_VAR}]" in text(status)
    assert broken.is_error
    assert "broken" in text(broken)
    assert shared.token not in (shared.directory / "audit.jsonl").read_text(encoding="utf-8")
    assert [r["tool"] for r in new_calls()] == ["screen.status", "screen.broken"]


@ERAS
async def test_a_screenshot_shown_by_a_snippet_arrives_as_an_image_block(
    eras: dict[str, Client], mode: ConnectMode
) -> None:
    code = (
        "shot, caption = tools.screen.screenshot(label='home')\n"
        "show(shot)\n"
        "Blob('a,b\\n1,2\\n', mime_type='text/csv')"
    )
    with anyio.fail_after(WAIT):
        result = await eras[mode].call_tool("execute_code", {"code": code})
        detailed = await eras[mode].call_tool("execute_code", {"code": code, "details": True})
    assert not result.is_error, result.content
    printed, image, table = result.content
    assert isinstance(printed, types.TextContent)
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == SCREENSHOT
    assert isinstance(table, types.EmbeddedResource)
    assert isinstance(table.resource, types.BlobResourceContents)
    assert base64.b64decode(table.resource.blob) == b"a,b\n1,2\n"
    assert result.structured_content is None
    assert "iVBOR" not in printed.text  # the PNG's base64 is the image block alone, not text too
    shown = full_record(detailed)["shown"]
    assert [item["kind"] for item in shown] == ["image", "resource"]
    assert all("data" not in item for item in shown)  # no base64 in the full record either


async def test_the_policy_decides_what_is_exposed_and_refuses_calls_with_the_pipelines_message(
    tmp_path: Path,
) -> None:
    policy = {
        "deny": ["screen.status"],
        "hidden": ["screen.broken"],
        "tools": {"screen.screenshot": {"args": {"properties": {"label": {"maxLength": 8}}}}},
    }
    expose = ["screen.screenshot", "screen.status", "screen.broken", "screen.screenshto"]
    config = screen_config(tmp_path, expose, policy=policy)
    async with sdk_client(config) as client:
        tools = await listed(client)
        denied = await call(client, "screen__status")
        constrained = await call(client, "screen__screenshot", {"label": "far too long a label"})
        allowed = await call(client, "screen__screenshot", {"label": "short"})
    assert list(tools) == ["search_docs", "execute_code", "screen__screenshot"]
    assert denied.is_error
    assert "unknown tool 'screen__status'" in text(denied)
    assert constrained.is_error
    assert "screen.screenshot" in text(constrained)
    assert "policy.tools" in text(constrained) or "label" in text(constrained)
    assert not allowed.is_error, text(allowed)
    # Only the calls that were made reached the audit log: the refused one, and the allowed one.
    assert [(r["tool"], r["ok"]) for r in tool_calls(tmp_path)] == [
        ("screen.screenshot", False),
        ("screen.screenshot", True),
    ]
    code, out, err = await cli("check", "--config", str(config))
    assert code == 1
    assert "exposed: screen__screenshot (screen.screenshot)" in out
    assert 'error: expose[1] "screen.status" is not listed: screen.status is denied by policy (deny:' in err
    assert 'error: expose[2] "screen.broken" is not listed: screen.broken is hidden by policy.hidden' in err
    assert "error: expose[3] \"screen.screenshto\" is not listed: server 'screen' has no tool" in err
    assert "did you mean screen.screenshot" in err


@dataclass
class Headless:
    """A gateway of a client that cannot be asked (no elicitation), one per era: it exposes the
    ledger's `append` (which needs approval) and the fault server's `add_tool` and `late_tool` (which
    does not exist until `add_tool` makes it); `told` gets every tools/list_changed the client hears."""

    client: Client
    directory: Path
    told: MemoryObjectReceiveStream[None]


HEADLESS_EXPOSE = ["ledger.append", "fault.add_tool", "fault.late_tool"]


@asynccontextmanager
async def headless_gateway(directory: Path, mode: ConnectMode) -> AsyncIterator[Headless]:
    config = write_config(
        directory,
        {
            "mcpServers": {
                "ledger": ledger_server(directory),
                "fault": {"command": sys.executable, "args": [str(FAULT_SERVER)]},
            },
            "expose": HEADLESS_EXPOSE,
            "policy": {"approve": ["ledger.append"]},
            "audit": {"path": str(directory / "audit.jsonl")},
        },
    )
    told, heard = anyio.create_memory_object_stream[None](math.inf)

    async def messages(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.send_nowait(None)

    with told, heard:
        async with sdk_client(config, mode, messages=messages) as client:  # no elicitation: headless
            yield Headless(client, directory, heard)


@pytest.fixture(scope="module")
async def headless_auto(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Headless]:
    async with headless_gateway(tmp_path_factory.mktemp("headless-auto"), "auto") as headless:
        yield headless


@pytest.fixture(scope="module")
async def headless_legacy(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Headless]:
    async with headless_gateway(tmp_path_factory.mktemp("headless-legacy"), "legacy") as headless:
        yield headless


@pytest.fixture
def headless_eras(headless_auto: Headless, headless_legacy: Headless) -> dict[str, Headless]:
    """The headless gateway of each era, by its mode."""
    return {"auto": headless_auto, "legacy": headless_legacy}


@ERAS
async def test_an_exposed_tool_needing_approval_reaches_the_child_once_accepted_and_never_declined(
    eras: dict[str, Client],
    shared: Shared,
    user: User,
    tag: str,
    new_calls: Callable[[], list[dict[str, Any]]],
    mode: ConnectMode,
) -> None:
    user.actions = ["accept", "decline"]
    accepted = await call(eras[mode], "ledger__append", {"entry": f"{tag} approved"})
    declined = await call(eras[mode], "ledger__append", {"entry": f"{tag} refused"})
    assert not accepted.is_error, text(accepted)
    # The child's count of its (shared) ledger: the declined call added nothing after it.
    assert accepted.structured_content == {"result": len(ledger_entries(shared.directory))}
    assert declined.is_error
    assert "the user declined" in text(declined)
    assert entries(shared.directory, tag) == ["approved"]
    assert len(user.prompts) == 2
    assert "ledger.append" in user.prompts[0]
    assert f'entry: "{tag} approved"' in user.prompts[0]
    assert f'entry: "{tag} refused"' in user.prompts[1]
    calls = new_calls()
    made = [(r["tool"], r["approval"], r["ok"]) for r in calls]
    if mode == "auto":  # each call paused once (its quota given back), then was answered
        assert made == [
            ("ledger.append", "pending", False),
            ("ledger.append", "approved", True),
            ("ledger.append", "pending", False),
            ("ledger.append", "declined", False),
        ]
        ids = [r["execution_id"] for r in calls]
        assert ids[0] == ids[1] != ids[2] == ids[3]  # a round continues its call's execution
    else:
        assert made == [("ledger.append", "approved", True), ("ledger.append", "declined", False)]


@ERAS
async def test_a_client_that_cannot_ask_gets_a_refusal_for_an_exposed_tool_needing_approval(
    headless_eras: dict[str, Headless], tag: str, mode: ConnectMode
) -> None:
    headless = headless_eras[mode]
    seen = len(tool_calls(headless.directory)) if (headless.directory / "audit.jsonl").exists() else 0
    result = await call(headless.client, "ledger__append", {"entry": f"{tag} unasked"})
    assert result.is_error
    assert "cannot ask the user" in text(result)
    assert entries(headless.directory, tag) == []
    assert [r["approval"] for r in tool_calls(headless.directory)[seen:]] == ["unavailable"]


async def test_an_approval_state_for_an_exposed_call_answers_that_call_once(
    auto_client: Client, shared: Shared, user: User, tag: str
) -> None:
    approve = types.ElicitResult(action="accept", content={})
    arguments = {"entry": f"{tag} once"}
    session = auto_client.session
    with anyio.fail_after(WAIT):
        paused = await session.call_tool("ledger__append", arguments, allow_input_required=True)
        assert isinstance(paused, types.InputRequiredResult), paused
        assert paused.request_state is not None
        assert "once" not in paused.request_state  # sealed
        retry = {"input_responses": {"approval": approve}, "request_state": paused.request_state}
        done = await session.call_tool("ledger__append", arguments, allow_input_required=True, **retry)
        replayed = await session.call_tool("ledger__append", arguments, allow_input_required=True, **retry)
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error, text(done)
    assert isinstance(replayed, types.CallToolResult)
    assert replayed.is_error
    assert "already used" in text(replayed)
    assert entries(shared.directory, tag) == ["once"]


@ERAS
async def test_clients_are_told_when_a_childs_tools_change_the_exposed_set(
    headless_eras: dict[str, Headless], mode: ConnectMode
) -> None:
    # `late_tool` does not exist yet: calling `add_tool` directly makes the child add it (the only
    # test that does, on each era's gateway).
    client, notifications = headless_eras[mode].client, headless_eras[mode].told
    before = await listed(client)
    assert "fault__late_tool" not in before
    if mode == "auto":  # 2026-07-28: change notifications come on a stream the client opens
        async with client.listen(tools_list_changed=True) as changes:
            await call(client, "fault__add_tool", {"name": "late_tool"})
            with anyio.fail_after(WAIT):
                event = await changes.__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        after = await listed(client)
    else:
        await call(client, "fault__add_tool", {"name": "late_tool"})
        # The one for the child's first listing may have come after the first `listed` above, so the
        # test waits for a notification after which the tool shows.
        with anyio.fail_after(WAIT):
            after = before
            while "fault__late_tool" not in after:
                await notifications.receive()
                after = await listed(client)
    late = await call(client, "fault__late_tool")
    assert list(before) == ["search_docs", "execute_code", "ledger__append", "fault__add_tool"]
    assert list(after) == [
        "search_docs",
        "execute_code",
        "ledger__append",
        "fault__add_tool",
        "fault__late_tool",
    ]
    assert text(late) == "late_tool answers"
