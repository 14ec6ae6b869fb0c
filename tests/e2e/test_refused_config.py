"""A config the gateway refuses, through the real `serve` process: over stdio the connected client is
told why (as `check` says it) and nothing is served until it leaves; over HTTP the gateway still
refuses to start."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.client.stdio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.gateway_process import WAIT, cli, environment, gateway_args, sdk_client, text, write_config

pytestmark = pytest.mark.anyio

REFUSED = "codemode-gateway refused its config: it serves nothing until the config is fixed"
SERVES_NOTHING_LOG = "config refused: the gateway serves nothing"

# The gateway's exit status, written to stderr once it has exited (the SDK client does not say it).
EXIT_STATUS = '"$@"; echo "exit status $?" >&2'


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    """What a client connected to `serve` saw: the handshake's instructions, the tools listed, the
    answers of a search_docs and an execute_code call (their text and whether they were errors)."""

    instructions: str | None
    tools: list[str]
    answers: list[tuple[bool, str]]


@asynccontextmanager
async def client_of(
    config: Path, log: Path, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An SDK client session (to initialize) with `serve --config CONFIG` (at INFO, its stderr to `log`,
    `env` added to its environment), whose exit status ends the log once the client has left."""
    serve = gateway_args("--log-level", "INFO", "serve", "--config", str(config))
    params = StdioServerParameters(
        command="sh", args=["-c", EXIT_STATUS, "sh", sys.executable, *serve], env=environment(env)
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            yield client


async def served(config: Path, log: Path, env: dict[str, str] | None = None) -> Served:
    """Connect to `serve --config CONFIG` (`env` added to its environment), list its tools, call both,
    and leave."""
    with anyio.fail_after(WAIT):
        async with client_of(config, log, env) as client:
            initialized = await client.initialize()
            tools = [tool.name for tool in (await client.list_tools()).tools]
            answers = []
            for name, arguments in (("search_docs", {"query": ""}), ("execute_code", {"code": "1 + 1"})):
                result = await client.call_tool(name, arguments)
                answers.append((bool(result.is_error), text(result)))
    return Served(initialized.instructions, tools, answers)


@pytest.fixture
def patient_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that, having closed the gateway's stdin, waits for it to exit on its own rather than
    signalling it after 2 s: how the gateway ended is then its own doing."""
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", WAIT)


def invalid_settings(directory: Path) -> Path:
    """A config with a typo in a key and a policy rule naming a server that is not configured."""
    return write_config(
        directory, {"mcpServers": {}, "sandbox": {"timeout": 5}, "policy": {"deny": ["gihtub.*"]}}
    )


async def check_says(config: Path, env: dict[str, str] | None = None) -> str:
    code, _, err = await cli("check", "--config", str(config), env=environment(env))
    assert code == 2, err
    return err.strip()


@pytest.mark.usefixtures("patient_client")
async def test_a_refused_config_over_stdio_is_told_to_the_client_and_the_gateway_exits_when_it_leaves(
    tmp_path: Path,
) -> None:
    config = invalid_settings(tmp_path)
    log = tmp_path / "gateway.log"
    said = await served(config, log)
    by_check = await check_says(config)
    assert by_check.startswith("codemode-gateway: ")
    assert 'sandbox.timeout: unknown key "timeout"; did you mean "timeout_seconds"?' in by_check
    assert "gihtub" in by_check

    assert said.instructions is not None
    assert said.instructions.startswith(REFUSED)
    assert by_check in said.instructions
    assert f"codemode-gateway check --config {config}" in said.instructions
    assert "restart the connection" in said.instructions
    assert said.tools == ["search_docs", "execute_code"]
    assert said.answers == [(True, said.instructions), (True, said.instructions)]

    logged = log.read_text(encoding="utf-8")
    assert SERVES_NOTHING_LOG in logged  # the reason is logged as the gateway starts, for the client's log
    assert "sandbox.timeout" in logged
    assert "shutting down" not in logged  # no signal ended it: stdin closing did
    assert logged.rstrip().endswith("exit status 2")


@pytest.mark.usefixtures("patient_client")
@pytest.mark.parametrize(
    "mistake",
    [
        "not JSON",
        "an unset variable",
        "a malformed lockfile",
        "an unopenable audit log",
        "an unknown exporter",
    ],
)
async def test_each_kind_of_refusal_reaches_the_client_as_check_prints_it(
    tmp_path: Path, mistake: str
) -> None:
    config = tmp_path / "team.json"
    written: dict[str, Any] = {"mcpServers": {}, "search": {"semantic": "off"}}
    env: dict[str, str] = {}
    if mistake == "not JSON":
        config.write_text('{"mcpServers": {},}', encoding="utf-8")
    elif mistake == "an unset variable":
        written["state"] = {"url": "redis://:${CODEMODE_TEST_UNSET_PASSWORD}@localhost:6379/0"}
        config.write_text(json.dumps(written), encoding="utf-8")
    elif mistake == "a malformed lockfile":
        config.write_text(json.dumps(written), encoding="utf-8")
        (tmp_path / "team.lock.json").write_text("{", encoding="utf-8")  # a merge mangled it
    elif mistake == "an unopenable audit log":
        (tmp_path / "logs").write_text("a file where the log's directory should be", encoding="utf-8")
        written["audit"] = {"path": "logs/audit.jsonl"}
        config.write_text(json.dumps(written), encoding="utf-8")
    else:
        env["OTEL_TRACES_EXPORTER"] = "no_such_exporter"
        config.write_text(json.dumps(written), encoding="utf-8")
    log = tmp_path / "gateway.log"
    said = await served(config, log, env)
    by_check = await check_says(config, env)
    assert said.instructions is not None
    assert said.instructions.startswith(REFUSED)
    assert by_check in said.instructions
    assert [error for error, _ in said.answers] == [True, True]
    assert log.read_text(encoding="utf-8").rstrip().endswith("exit status 2")
    if mistake == "an unopenable audit log":
        assert f"cannot open the audit log {tmp_path / 'logs' / 'audit.jsonl'}: Not a directory" in by_check
    if mistake == "an unknown exporter":
        assert "tracing: OTEL_TRACES_EXPORTER names 'no_such_exporter'" in by_check


async def test_a_config_that_loads_serves_as_before(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mcpServers": {}})
    with anyio.fail_after(WAIT):
        async with sdk_client(config, "legacy") as client:
            instructions = client.instructions
            result = await client.call_tool("search_docs", {"query": ""})
    assert (
        instructions == "Use search_docs to find tools, then execute_code to call and combine them in Python."
    )
    assert not result.is_error
    assert text(result).startswith("No child servers are configured")


@pytest.mark.parametrize("where", ["--http", "the config's http section"])
async def test_over_http_a_refused_config_still_stops_the_gateway_at_start(
    tmp_path: Path, where: str
) -> None:
    config = invalid_settings(tmp_path)
    flags = ["--http", "--port", "0"]
    if where != "--http":
        data = json.loads(config.read_text(encoding="utf-8"))
        config.write_text(json.dumps({**data, "http": {"port": 0}}), encoding="utf-8")
        flags = []
    code, _, err = await cli("serve", *flags, "--config", str(config))
    assert code == 2
    assert 'sandbox.timeout: unknown key "timeout"' in err
    assert SERVES_NOTHING_LOG not in err
