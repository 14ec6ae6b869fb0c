"""Driving the real gateway process with the official TypeScript MCP SDK client (tests/e2e/ts_client).

`run_ts_client(script)` runs `node tests/e2e/ts_client/client.mjs` on one JSON script and returns its
JSON report; `gateway_script(config, ...)` writes the script that serves `config` with this checkout's
gateway. The script and report formats are described at the top of client.mjs.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from tests.e2e.gateway_process import WAIT, environment, gateway_args
from tests.real_servers import NPM_MODULES, REPO

CLIENT = Path(__file__).parent / "ts_client" / "client.mjs"
SDK = NPM_MODULES / "@modelcontextprotocol" / "sdk"

Elicitation = Literal["accept", "decline", "cancel", "none"]


def node() -> str:
    """The `node` executable, or a failed test saying it is missing."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH; the TypeScript client tests need Node 20")
    return found


def call(
    tool: str,
    arguments: dict[str, Any],
    *,
    progress: bool = False,
    cancel_after_ms: int | None = None,
    elicitation: Elicitation | None = None,
) -> dict[str, Any]:
    """A script step: callTool, with a progress token if `progress`, aborted after `cancel_after_ms`;
    with `elicitation`, the user answers that way during this step (not the script's way)."""
    entry: dict[str, Any] = {"tool": tool, "arguments": arguments, "progress": progress}
    if cancel_after_ms is not None:
        entry["cancel_after_ms"] = cancel_after_ms
    if elicitation is not None:
        entry["elicitation"] = elicitation
    return entry


def execute(
    code: str,
    *,
    progress: bool = False,
    cancel_after_ms: int | None = None,
    elicitation: Elicitation | None = None,
) -> dict[str, Any]:
    """A script step running `code` through execute_code."""
    arguments = {"code": code}
    return call(
        "execute_code", arguments, progress=progress, cancel_after_ms=cancel_after_ms, elicitation=elicitation
    )


def gateway_script(
    config: Path,
    *steps: dict[str, Any],
    elicitation: Elicitation = "none",
    elicitation_content: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The script that starts `python -m gateway serve --config CONFIG` and runs `steps` on it.

    `elicitation` is how the user answers every elicitation request ("none": the client cannot be
    asked); "accept" answers with `elicitation_content`, by default every boolean of the form true.
    """
    script: dict[str, Any] = {
        "command": [sys.executable, *gateway_args("serve", "--config", str(config))],
        # Without an env the SDK gives the server only HOME, PATH, USER and a few more (its
        # getDefaultEnvironment), so the gateway gets this process's environment, as the Python SDK does.
        "env": env or environment(),
        "cwd": str(REPO),
        "elicitation": elicitation,
        "steps": list(steps),
    }
    if elicitation_content is not None:
        script["elicitation_content"] = elicitation_content
    return script


async def run_ts_client(script: dict[str, Any], *, timeout: float = WAIT) -> dict[str, Any]:
    """Run the TypeScript client on `script`; its report, or a failed test with its stdout and stderr."""
    if not (SDK / "package.json").exists():
        pytest.fail(f"@modelcontextprotocol/sdk is not installed under {NPM_MODULES}: run `make setup`")
    # The SDK is found through this argument, not NODE_PATH: ESM imports ignore NODE_PATH, so client.mjs
    # imports the SDK's files by absolute file URL under NPM_MODULES (no symlink, no loader flag), and
    # the SDK's own dependencies resolve from there.
    with anyio.fail_after(timeout):
        done = await anyio.run_process(
            [node(), str(CLIENT), str(NPM_MODULES)],
            input=json.dumps(script).encode(),
            check=False,
        )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    if done.returncode != 0:
        pytest.fail(f"the TypeScript client exited {done.returncode}\nstdout: {stdout}\nstderr:\n{stderr}")
    try:
        report: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError:
        pytest.fail(f"the TypeScript client printed no JSON report\nstdout: {stdout}\nstderr:\n{stderr}")
    report["stderr"] = stderr  # the gateway's log (the client passes it through), for failure messages
    return report
