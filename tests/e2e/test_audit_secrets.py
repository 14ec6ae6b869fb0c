"""Secrets and the audit log, end to end through the real gateway process and a real child."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.gateway_process import LEXICAL_SEARCH, gateway_args
from tests.real_servers import npm_entry_point

pytestmark = pytest.mark.anyio

TOKEN = "tok_5f1e2d3c4b5a69788796a5b4c3d2e1f0"
UNRELATED = "gateway-only-secret-0123456789abcdef"


async def test_expanded_secrets_never_reach_the_model_or_the_audit_log(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "everything": {
                "command": "node",
                "args": [str(npm_entry_point("@modelcontextprotocol/server-everything"))],
                "env": {"DEMO_TOKEN": "${DEMO_TOKEN}"},
            },
        },
        "audit": {"path": "audit.jsonl", "include_script": True},
        **LEXICAL_SEARCH,
    }
    (tmp_path / "gateway.json").write_text(json.dumps(config), encoding="utf-8")
    env = {**os.environ, "DEMO_TOKEN": TOKEN, "UNRELATED_SECRET": UNRELATED}
    params = StdioServerParameters(
        command=sys.executable,
        args=gateway_args("serve", "--config", str(tmp_path / "gateway.json")),
        env=env,
    )
    code = (
        "env = tools.everything.get_env()\n"
        "text = env if isinstance(env, str) else str(env)\n"
        "print(text)\n"
        "{'child_has_token': 'DEMO_TOKEN' in text, 'unrelated_leaked': 'UNRELATED_SECRET' in text}"
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(120):
            await session.initialize()
            result = await session.call_tool("execute_code", {"code": code, "details": True})
    outcome: dict[str, Any] = result.structured_content or {}
    assert outcome["ok"], outcome
    assert outcome["value"] == {"child_has_token": True, "unrelated_leaked": False}
    wire = json.dumps(result.model_dump(mode="json"))
    assert TOKEN not in wire
    assert "[REDACTED:DEMO_TOKEN]" in outcome["stdout"]

    records = [
        json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    kinds = [record["kind"] for record in records]
    assert kinds == ["tool_call", "execution"]
    call, execution = records
    assert call["tool"] == "everything.get_env"
    assert call["execution_id"] == execution["execution_id"]
    assert execution["script"] == code
    assert TOKEN not in (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
